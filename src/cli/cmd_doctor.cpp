// SPDX-License-Identifier: Apache-2.0
// `cardiac doctor`: gather evidence (live or captured), run every check, print the findings
// as text, JSON, markdown or one self-contained HTML file.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baseline/json.h"
#include "cli/commands.h"
#include "config/config.h"
#include "core/format.h"
#include "core/strings.h"
#include "doctor/checks/checks.h"
#include "doctor/finding_ids.h"
#include "doctor/live/gather.h"
#include "doctor/render/render.h"

namespace cardiac::cli {
namespace {

// Where the findings' runbook links point: --runbook-base, else CARDIAC_RUNBOOK_BASE (a site's
// wiki, set once for every user), else the runbooks the package installed, else the source
// tree's folder (a build run from a checkout).
std::string runbook_base(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("CARDIAC_RUNBOOK_BASE"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string installed(doctor::kInstalledRunbooks);
  if (::access(installed.c_str(), F_OK) == 0) return installed;
  // From a source checkout: the folder's absolute path, so the HTML report's links open from
  // wherever the report is saved.
  std::error_code ec;
  auto source = std::filesystem::absolute(std::string(doctor::kSourceRunbooks), ec);
  if (!ec && std::filesystem::is_directory(source, ec)) return source.string();
  return std::string(doctor::kSourceRunbooks);
}

struct DoctorOptions {
  bool json = false;
  bool markdown = false;
  bool html = false;
  std::string output;
  std::string runbook_base;
  std::string root;
  std::string kmsg;
  std::string db;
  std::string baseline;
  bool offline = false;
  std::string window;
  std::string interval = "1s";
  std::string since = "10m";
  std::vector<std::string> probes;
  std::string gateway;
  bool no_probe = false;
  bool no_kmsg = false;
  unsigned expected_gpus = 0;
  std::string nvml_lib;
  std::string timeout;
  int year = 0;
  std::string color = "auto";
  bool quiet = false;
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;
};

Result<DurationNs> duration_flag(std::string_view flag, const std::string& text, bool allow_zero) {
  auto d = parse_duration_ns(text);
  if (!d || *d < 0 || (!allow_zero && *d == 0)) {
    return fail(Error::invalid(fmt::format("not a duration: '{}' (e.g. 10s, 500ms)", text),
                               std::string(flag)));
  }
  return *d;
}

// A one-line progress indicator on a terminal's stderr; silent elsewhere but for one line
// saying what is being waited for.
class ProgressLine {
 public:
  ProgressLine(std::ostream& err, bool tty, bool quiet) : err_(err), tty_(tty), quiet_(quiet) {}
  ~ProgressLine() { finish(); }
  void operator()(std::string_view stage, double fraction) {
    if (quiet_) return;
    if (!tty_) {
      if (stage != last_stage_) err_ << "cardiac doctor: " << stage << "…\n";
      last_stage_ = std::string(stage);
      return;
    }
    int width = 30;
    int filled = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * width));
    err_ << "\r"
         << fmt::format("{:<10} [{}{}] {:3.0f} %", stage, std::string(filled, '#'),
                        std::string(width - filled, ' '), fraction * 100)
         << std::flush;
    drawn_ = true;
    last_stage_ = std::string(stage);
  }
  void finish() {
    if (drawn_) err_ << "\r" << std::string(60, ' ') << "\r" << std::flush;
    drawn_ = false;
  }

 private:
  std::ostream& err_;
  bool tty_;
  bool quiet_;
  bool drawn_ = false;
  std::string last_stage_;
};

int run_doctor(DoctorOptions o, Context& ctx) {
  auto usage = [&](const std::string& msg) {
    ctx.err << "cardiac doctor: " << msg << "\n";
    return static_cast<int>(kExitUsage);
  };
  if (static_cast<int>(o.json) + static_cast<int>(o.markdown) + static_cast<int>(o.html) > 1) {
    return usage("choose one of --json, --markdown, --html");
  }
  auto cfg = config::load_config(o.config, o.config_named);
  if (!cfg) return usage(cfg.error().what());
  // Read before the sampling window, so that a bad file costs no wait.
  std::optional<baseline::Baseline> base;
  if (!o.baseline.empty()) {
    auto b = baseline::load_baseline(o.baseline);
    if (!b) return usage("--baseline: " + b.error().what());
    base = std::move(*b);
  }

  doctor::GatherOptions g;
  g.offline = o.offline;
  g.root = o.root.empty() ? cfg->host.root : o.root;
  g.nvml_lib = o.nvml_lib.empty() ? cfg->nvml.library : o.nvml_lib;
  g.nvml_timeout = cfg->nvml.timeout;
  if (!o.timeout.empty()) {
    auto t = duration_flag("--timeout", o.timeout, false);
    if (!t) return usage(t.error().what());
    g.nvml_timeout = *t;
  }
  g.window = cfg->doctor.window;
  if (!o.window.empty()) {
    auto w = duration_flag("--window", o.window, true);
    if (!w) return usage(w.error().what());
    g.window = *w;
  }
  auto interval = duration_flag("--interval", o.interval, false);
  if (!interval) return usage(interval.error().what());
  g.sample_interval = *interval;
  auto since = duration_flag("--since", o.since, false);
  if (!since) return usage(since.error().what());
  g.history = *since;
  g.kmsg_file = o.kmsg;
  g.no_kmsg = o.no_kmsg;
  g.year_hint = o.year;
  g.db = o.db;
  g.probe_targets = o.probes.empty() ? cfg->doctor.probe : o.probes;
  g.gateway = o.gateway;
  g.no_probe = o.no_probe;
  g.config.expected_gpus = o.expected_gpus > 0 ? o.expected_gpus : cfg->agent.expected_gpus;
  if (g.config.expected_gpus == 0U) g.config.expected_gpus.reset();
  g.config.probe_targets = g.probe_targets;
  g.config.runbook_base = runbook_base(o.runbook_base);
  g.config.allowed_gpu_commands = cfg->security.allowed_gpu_commands;
  for (const auto& p : cfg->security.allowed_listen_ports) {
    g.config.allowed_listen_ports.push_back({p.proto, p.low, p.high});
  }
  g.engines = cfg->serving.engines;
  g.engine_timeout = cfg->serving.scrape_timeout;

  ProgressLine progress(ctx.err, isatty(STDERR_FILENO) != 0, o.quiet);
  std::vector<std::string> skipped;
  auto sleeper = [](DurationNs d) {
    timespec ts{static_cast<time_t>(d / kNsPerSec), static_cast<long>(d % kNsPerSec)};
    while (nanosleep(&ts, &ts) != 0) {
    }
  };
  auto input = doctor::gather(
      g, ctx.clock, sleeper, [&](std::string_view s, double f) { progress(s, f); }, skipped);
  progress.finish();
  if (!input) {
    // A named input that is missing or malformed is the user's to fix (2); one that is there
    // but cannot be read (permissions, I/O) leaves the doctor nothing to judge (3).
    const ErrorCode code = input.error().code;
    if (code != ErrorCode::kIo && code != ErrorCode::kPermission) {
      return usage(input.error().what());
    }
    ctx.err << "cardiac doctor: " << input.error().what() << "\n";
    return kExitCannotRun;
  }

  input->baseline = std::move(base);
  input->baseline_file = o.baseline;
  doctor::Report report = doctor::diagnose(*input);
  report.sources.live = !o.offline;
  report.sources.root = g.root;
  report.sources.kmsg = input->kmsg_source;
  report.sources.db = o.db;
  if (input->host_samples.size() >= 2) {
    report.sources.window =
        input->host_samples.back().taken_at - input->host_samples.front().taken_at;
  }
  report.sources.gpu_samples = static_cast<unsigned>(input->gpu_samples.size());
  report.sources.host_samples = static_cast<unsigned>(input->host_samples.size());
  report.sources.skipped = skipped;

  std::string text;
  if (o.json) {
    text = doctor::to_json(report).dump(2) + "\n";
  } else if (o.markdown) {
    text = doctor::render_markdown(report);
  } else if (o.html) {
    text = doctor::render_html(report);
  } else {
    bool color = o.color == "always" || (o.color == "auto" && ctx.out_is_tty && o.output.empty());
    text = doctor::render_text(report, color);
  }
  if (!o.output.empty()) {
    std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) {
      ctx.err << "cardiac doctor: --output " << o.output << ": cannot write\n";
      return kExitCannotRun;
    }
    if (!o.quiet) ctx.err << "cardiac doctor: report written to " << o.output << "\n";
  } else {
    ctx.out << text;
    ctx.out.flush();
  }
  return report.worst() == doctor::Severity::kInfo ? kExitOk : kExitFindings;
}

}  // namespace

Runner register_doctor(CLI::App& sub) {
  auto o = std::make_shared<DoctorOptions>();
  sub.add_flag("--json", o->json, "Print the report as JSON (docs/doctor.md)");
  sub.add_flag("--markdown", o->markdown, "Print the report as markdown (for a ticket)");
  sub.add_flag("--html", o->html, "Print the report as one self-contained HTML file");
  sub.add_option("-o,--output", o->output, "Write the report to FILE instead of stdout");
  sub.add_option("--root", o->root,
                 "Read /proc and /sys under DIR (a captured host tree, or a "
                 "directory of snapshots t0/, t1/, …)");
  sub.add_option("--kmsg", o->kmsg,
                 "Read this kernel log (dmesg, dmesg -T, syslog, journalctl, /dev/kmsg dump; "
                 "plain or compressed with gzip, xz or zstd) instead of the live one");
  sub.add_option("--db", o->db, "Use an agent store's history and events (cardiac.db)");
  sub.add_option("--baseline", o->baseline,
                 "Compare this node's configuration with a baseline file (cardiac baseline "
                 "capture) and report every difference (drift.* findings)");
  sub.add_flag("--offline", o->offline, "Do not ask NVML, send probes or read the live kernel log");
  sub.add_option("--window", o->window,
                 "Sample this long when there is no history (default 10s; 0 = one sample)");
  sub.add_option("--interval", o->interval, "Time between samples in the window")
      ->capture_default_str();
  sub.add_option("--since", o->since, "With --db: how much history to read")->capture_default_str();
  sub.add_option("--probe", o->probes,
                 "Network target to probe (repeatable): HOST, tcp://HOST:PORT or udp://HOST:PORT");
  sub.add_option("--runbook-base", o->runbook_base,
                 "Where findings link their runbooks: a folder or a URL (default: "
                 "CARDIAC_RUNBOOK_BASE, else /usr/share/doc/cardiac/runbooks when installed, else "
                 "docs/runbooks)");
  sub.add_option("--gateway", o->gateway,
                 "Near target to compare with (default: the default gateway; \"none\" to skip)");
  sub.add_flag("--no-probe", o->no_probe, "Send no network probes");
  sub.add_flag("--no-kmsg", o->no_kmsg, "Do not read the kernel log");
  sub.add_option("--expected-gpus", o->expected_gpus, "GPUs this machine should have");
  sub.add_option("--nvml-lib", o->nvml_lib,
                 "NVML library to load (default libnvidia-ml.so.1, then libnvidia-ml.so)");
  sub.add_option("--timeout", o->timeout, "Deadline for each NVML answer (e.g. 5s)");
  sub.add_option("--year", o->year,
                 "Year of year-less syslog stamps in --kmsg (default: the year the file was "
                 "last modified)");
  sub.add_option("--color", o->color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  sub.add_flag("-q,--quiet", o->quiet, "No progress output");
  sub.add_option("--config", o->config, "Configuration file")->capture_default_str();
  return [o, &sub](Context& ctx) {
    o->config_named = sub.count("--config") > 0;
    return run_doctor(*o, ctx);
  };
}

}  // namespace cardiac::cli
