// SPDX-License-Identifier: Apache-2.0
// `cardiac export prometheus-rules`: the alert rules as a Prometheus rule file, over the
// metric names the agent exports, for fleets that evaluate alerts in Prometheus.
// `cardiac export npd-config`: node-problem-detector's custom-plugin-monitor file for `cardiac
// npd`.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/cmd_export_gres.h"
#include "cli/commands.h"
#include "cli/node_check.h"
#include "core/strings.h"
#include "promrules/prometheus_rules.h"
#include "rules/defaults.h"
#include "rules/parse.h"

namespace cardiac::cli {
namespace {

struct ExportFlags {
  std::string output = "-";
  std::string rules_file;
  bool no_defaults = false;
  // npd-config
  std::string path = "/usr/bin/cardiac";
  std::string interval = "30s";
  std::string timeout = "10s";
  std::size_t max_output = 80;
};

// Writes `text` to `output` ('-': standard output).
int write_output(const std::string& output, const std::string& text, Context& ctx) {
  if (output == "-") {
    ctx.out << text;
    return kExitOk;
  }
  errno = 0;
  std::ofstream out(output, std::ios::trunc);
  if (!out || !(out << text) || !out.flush()) {
    // The stream keeps no reason; errno still holds the failed open(2) or write(2)'s.
    ctx.err << "cardiac export: cannot write " << output << ": "
            << (errno ? std::strerror(errno) : "write failed") << "\n";
    return kExitCannotRun;
  }
  return kExitOk;
}

int run_export_npd(const ExportFlags& f, Context& ctx) {
  for (const auto* d : {&f.interval, &f.timeout}) {
    auto ns = parse_duration_ns(*d);
    if (!ns || *ns <= 0) {
      ctx.err << "cardiac export npd-config: not a duration: '" << *d << "' (e.g. 30s, 1m)\n";
      return kExitUsage;
    }
  }
  if (f.path.empty() || f.path.front() != '/') {
    ctx.err << "cardiac export npd-config: --path must be absolute (NPD runs it from its own "
               "directory): '"
            << f.path << "'\n";
    return kExitUsage;
  }
  return write_output(f.output,
                      npd_config(f.path, f.interval, f.timeout, f.max_output).dump(2) + "\n", ctx);
}

int run_export_rules(const ExportFlags& f, Context& ctx) {
  std::vector<rules::Rule> all;
  if (!f.no_defaults) {
    auto d = rules::default_rules();
    if (!d) {
      ctx.err << "cardiac export: " << d.error().what() << "\n";
      return kExitCannotRun;
    }
    all = std::move(*d);
  }
  if (!f.rules_file.empty()) {
    errno = 0;
    std::ifstream in(f.rules_file);
    if (!in) {
      ctx.err << "cardiac export: cannot read " << f.rules_file << ": "
              << (errno ? std::strerror(errno) : "open failed") << "\n";
      return kExitUsage;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto extra = rules::parse_rules(text.str(), f.rules_file);
    if (!extra) {
      ctx.err << "cardiac export: " << extra.error().what() << "\n";
      return kExitUsage;
    }
    for (auto& r : *extra) all.push_back(std::move(r));
  }
  std::vector<std::string> skipped;
  std::string yaml = promrules::export_prometheus_rules(all, &skipped);
  for (const auto& s : skipped) ctx.err << "cardiac export: skipped " << s << "\n";
  return write_output(f.output, yaml, ctx);
}

}  // namespace

Runner register_export(CLI::App& sub) {
  auto f = std::make_shared<ExportFlags>();
  sub.require_subcommand(1);
  auto* rules = sub.add_subcommand("prometheus-rules", "Alert rules as a Prometheus rule file");
  rules->add_option("-o,--output", f->output, "File to write ('-' for stdout)")
      ->capture_default_str();
  rules->add_option("--rules", f->rules_file, "Extra rules file (TOML) to include");
  rules->add_flag("--no-default-rules", f->no_defaults, "Leave out the built-in rules");
  auto* npd = sub.add_subcommand(
      "npd-config", "node-problem-detector custom-plugin config running `cardiac npd`");
  npd->add_option("-o,--output", f->output, "File to write ('-' for stdout)")
      ->capture_default_str();
  npd->add_option("--path", f->path, "Where cardiac is installed on the nodes")
      ->capture_default_str();
  npd->add_option("--interval", f->interval, "How often NPD runs each check")
      ->capture_default_str();
  npd->add_option("--timeout", f->timeout, "NPD's deadline for one run")->capture_default_str();
  npd->add_option("--max-output", f->max_output, "NPD's max_output_length (bytes)")
      ->check(CLI::Range(8, 4096))
      ->capture_default_str();
  return with_export_slurm_gres(sub, [f, npd](Context& ctx) {
    return npd->parsed() ? run_export_npd(*f, ctx) : run_export_rules(*f, ctx);
  });
}

}  // namespace cardiac::cli
