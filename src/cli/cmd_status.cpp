// SPDX-License-Identifier: Apache-2.0
// `cardiac status`: sample every GPU (through the isolated worker) and the host, judge them,
// print a table or JSON; `--watch` repeats with rates between frames.
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/status_text.h"
#include "config/config.h"
#include "core/format.h"
#include "core/strings.h"
#include "health/report.h"
#include "host/bounded.h"
#include "host/host.h"
#include "platform/fs.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::cli {
namespace {

struct StatusOptions {
  bool json = false;
  std::optional<double> watch;  // seconds between frames
  std::string watch_text;
  int count = 0;  // frames to show with --watch (0 = until interrupted)
  std::string nvml_lib;
  std::string root = "/";
  std::string timeout = "5s";
  std::string color = "auto";
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;  // --config given: a missing file is then an error
  bool root_given = false;
  bool timeout_given = false;
};

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted = true;
}

// CPU rates need ticks between two host reads; a single frame only gets them when the GPU
// sample took long enough for them to mean something.
constexpr DurationNs kMinRateInterval = 100 * kNsPerMs;

// The host read gets the same deadline as an NVML answer: a dead NFS mount must not hang us.
host::HostSnapshot read_host(std::shared_ptr<const FileSystem> fs, const Clock& clock,
                             DurationNs deadline) {
  TimeNs now = clock.now();
  if (auto snap = host::collect_host_within(std::move(fs), now, deadline)) return *snap;
  host::HostSnapshot late;
  late.taken_at = now;
  late.timed_out = true;
  return late;
}

int exit_code_for(const health::StatusReport& r) {
  // A hung driver is a finding about this machine; the other reasons mean cardiac cannot
  // look at the GPUs at all.
  if (!r.nvml.available && r.nvml.error_kind != "unresponsive") return kExitCannotRun;
  return r.overall == health::Level::kOk ? kExitOk : kExitFindings;
}

int run_status(StatusOptions o, Context& ctx) {
  auto cfg = config::load_config(o.config, o.config_named);
  if (!cfg) {
    ctx.err << "cardiac status: " << cfg.error().what() << "\n";
    return kExitUsage;
  }
  // Flags win over the file, the file over built-in defaults.
  if (o.nvml_lib.empty()) o.nvml_lib = cfg->nvml.library;
  if (!o.root_given) o.root = cfg->host.root;
  if (!o.timeout_given) o.timeout = fmt::format("{}ns", cfg->nvml.timeout);
  auto timeout = parse_duration_ns(o.timeout);
  if (!timeout || *timeout <= 0) {
    ctx.err << "cardiac status: --timeout: not a duration: '" << o.timeout
            << "' (e.g. 5s, 500ms)\n";
    return kExitUsage;
  }
  if (o.count > 0 && !o.watch) {
    ctx.err << "cardiac status: --count needs --watch\n";
    return kExitUsage;
  }
  if (o.watch && *o.watch <= 0) {
    ctx.err << "cardiac status: --watch: the interval must be positive\n";
    return kExitUsage;
  }
  auto fs = std::make_shared<RootFs>(o.root);
  std::error_code ec;
  const bool live = std::filesystem::equivalent(o.root, "/", ec);
  if (!fs->exists("/proc")) {
    ctx.err << "cardiac status: --root " << o.root << ": no proc/ directory under it\n";
    return kExitUsage;
  }
  telemetry::GpuCollectorOptions copts;
  copts.nvml_lib = o.nvml_lib;
  copts.timeout = *timeout;
  telemetry::GpuCollector collector(copts, ctx.clock);
  TextStyle style{o.color == "always" || (o.color == "auto" && ctx.out_is_tty)};

  if (o.watch) {
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
  }
  std::optional<host::HostSnapshot> previous;
  int rc = kExitOk;
  for (int frame = 0;; ++frame) {
    host::HostSnapshot before = previous ? *previous : read_host(fs, ctx.clock, *timeout);
    nvml::GpuSnapshot gpus = collector.sample();
    health::name_gpu_processes(*fs, gpus);
    host::HostSnapshot after = read_host(fs, ctx.clock, *timeout);
    std::optional<host::HostRates> rates;
    // A captured tree does not change between two reads: rates over it would be zeros made up
    // from this machine's clock, and the report would depend on how long the GPU sample took.
    if (live && after.taken_at - before.taken_at >= kMinRateInterval) {
      rates = host::compute_rates(before, after);
    }
    previous = after;
    auto report =
        health::build_report(std::move(gpus), std::move(after), rates ? &*rates : nullptr);
    rc = exit_code_for(report);
    if (o.json) {
      ctx.out << health::to_json(report).dump(o.watch ? -1 : 2) << "\n";
    } else {
      if (o.watch && ctx.out_is_tty) ctx.out << "\033[H\033[2J";
      ctx.out << render_status_text(report, style);
      if (o.watch) ctx.out << "\n";
    }
    ctx.out.flush();
    if (!o.watch || g_interrupted || (o.count > 0 && frame + 1 >= o.count)) break;
    // Sleep in short slices so Ctrl-C ends the watch promptly. The frames' timestamps come
    // from ctx.clock; the pause between them is real time whatever clock a caller passes.
    const auto pause = static_cast<DurationNs>(*o.watch * 1e9);
    for (DurationNs slept = 0; !g_interrupted && slept < pause; slept += 50 * kNsPerMs) {
      timespec ts{0, 50 * kNsPerMs};
      nanosleep(&ts, nullptr);
    }
    if (g_interrupted) break;
  }
  return rc;
}

}  // namespace

Runner register_status(CLI::App& sub) {
  auto o = std::make_shared<StatusOptions>();
  sub.add_flag("--json", o->json, "Print the report as JSON (docs/status.md)");
  sub.add_option("--watch", o->watch_text, "Refresh every SECONDS (default 2)")
      ->expected(0, 1)
      ->option_text("[SECONDS]");
  sub.add_option("--count", o->count, "With --watch: stop after N frames")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--nvml-lib", o->nvml_lib,
                 "NVML library to load (default libnvidia-ml.so.1, then libnvidia-ml.so)");
  sub.add_option("--root", o->root, "Read /proc and /sys under DIR (a captured host tree)")
      ->capture_default_str();
  sub.add_option("--timeout", o->timeout, "Deadline for each NVML answer (e.g. 5s, 500ms)")
      ->capture_default_str();
  sub.add_option("--config", o->config, "Configuration file")->capture_default_str();
  sub.add_option("--color", o->color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return [o, &sub](Context& ctx) {
    // `--watch` given without a value means the default interval.
    if (sub.count("--watch")) {
      auto seconds =
          o->watch_text.empty() ? std::optional<double>(2.0) : parse_double(o->watch_text);
      if (!seconds) {
        ctx.err << "cardiac status: --watch: not a number of seconds: '" << o->watch_text << "'\n";
        return static_cast<int>(kExitUsage);
      }
      o->watch = seconds;
    }
    o->config_named = sub.count("--config") > 0;
    o->root_given = sub.count("--root") > 0;
    o->timeout_given = sub.count("--timeout") > 0;
    return run_status(*o, ctx);
  };
}

}  // namespace cardiac::cli
