// SPDX-License-Identifier: Apache-2.0
// `cardiac export prometheus-rules`: the alert rules as a Prometheus rule file, over the
// metric names the agent exports, for fleets that evaluate alerts in Prometheus.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "promrules/prometheus_rules.h"
#include "rules/defaults.h"
#include "rules/parse.h"

namespace cardiac::cli {
namespace {

struct ExportFlags {
  std::string output = "-";
  std::string rules_file;
  bool no_defaults = false;
};

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
  if (f.output == "-") {
    ctx.out << yaml;
    return kExitOk;
  }
  errno = 0;
  std::ofstream out(f.output, std::ios::trunc);
  if (!out || !(out << yaml) || !out.flush()) {
    // The stream keeps no reason; errno still holds the failed open(2) or write(2)'s.
    ctx.err << "cardiac export: cannot write " << f.output << ": "
            << (errno ? std::strerror(errno) : "write failed") << "\n";
    return kExitCannotRun;
  }
  return kExitOk;
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
  return [f](Context& ctx) { return run_export_rules(*f, ctx); };
}

}  // namespace cardiac::cli
