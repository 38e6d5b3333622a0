// SPDX-License-Identifier: Apache-2.0
// `cardiac export prometheus-rules`: the alert rules as a Prometheus rule file, over the
// metric names the agent exports, for fleets that evaluate alerts in Prometheus.
// `cardiac export grafana-dashboard`: a Grafana dashboard over the same metric names.
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
#include "grafana/dashboard.h"
#include "promrules/fleet_rules.h"
#include "promrules/prometheus_rules.h"
#include "rules/defaults.h"
#include "rules/parse.h"

namespace cardiac::cli {
namespace {

struct ExportFlags {
  std::string output = "-";
  std::string rules_file;
  bool no_defaults = false;
  bool no_fleet = false;
  promrules::FleetOptions fleet;
  // grafana-dashboard
  std::string compat = "native";
  std::string datasource;
  std::string title;
  std::string uid;
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
  if (!f.no_fleet) yaml += promrules::export_fleet_rules(f.fleet);
  return write_output(f.output, yaml, ctx);
}

int run_export_dashboard(const ExportFlags& f, Context& ctx) {
  grafana::Options o;
  o.naming = f.compat == "dcgm" ? grafana::Naming::kDcgm : grafana::Naming::kNative;
  o.datasource = f.datasource;
  o.job = f.fleet.job;
  if (!f.title.empty()) o.title = f.title;
  if (!f.uid.empty()) o.uid = f.uid;
  const grafana::Dashboard d = grafana::dashboard(o);
  for (const auto& s : d.left_out) ctx.err << "cardiac export: left out " << s << "\n";
  return write_output(f.output, grafana::render_dashboard(d, o).dump(2) + "\n", ctx);
}

// Prometheus' label-value and job-name grammar is wider, but these travel inside PromQL
// strings and Grafana UIDs: keep them to characters that need no escaping.
bool plain_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = c == '_' || c == '-' || c == '.' || c == ':' || (c >= 'a' && c <= 'z') ||
                    (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Runner register_export(CLI::App& sub) {
  auto f = std::make_shared<ExportFlags>();
  sub.require_subcommand(1);
  auto* rules = sub.add_subcommand(
      "prometheus-rules",
      "Alert rules as a Prometheus rule file, with the cardiac_fleet group across nodes");
  rules->add_option("-o,--output", f->output, "File to write ('-' for stdout)")
      ->capture_default_str();
  rules->add_option("--rules", f->rules_file, "Extra rules file (TOML) to include");
  rules->add_flag("--no-default-rules", f->no_defaults, "Leave out the built-in rules");
  rules->add_flag("--no-fleet-rules", f->no_fleet,
                  "Leave out the cardiac_fleet group (rules across nodes)");
  rules->add_option("--job", f->fleet.job, "Prometheus job that scrapes the agents (fleet rules)")
      ->capture_default_str();
  rules
      ->add_option("--expected-gpus", f->fleet.expected_gpus,
                   "GPUs every node should have; 0: each node against its own most in 1d")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  rules
      ->add_option("--xid-storm-nodes", f->fleet.xid_storm_nodes,
                   "Nodes with Xids within 10m that make an Xid storm")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  rules
      ->add_option("--throttle-nodes", f->fleet.throttle_nodes,
                   "Nodes slowed for heat or power at once that raise cardiac_fleet_throttling "
                   "(and at least 10 % of the nodes)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  auto* dash = sub.add_subcommand(
      "grafana-dashboard",
      "Grafana dashboard (JSON): fleet health, GPUs per node, Xids and faults, throttling, "
      "job queue");
  dash->add_option("-o,--output", f->output, "File to write ('-' for stdout)")
      ->capture_default_str();
  dash->add_option("--compat", f->compat,
                   "Metric names the queries read: native (cardiac_...) or dcgm (dcgm-exporter's "
                   "DCGM_FI_..., from agents with metrics_compat = \"dcgm\" or dcgm-exporter)")
      ->check(CLI::IsMember({"native", "dcgm"}))
      ->capture_default_str();
  dash->add_option("--datasource", f->datasource,
                   "UID of the Grafana Prometheus data source to bind (default: a data-source "
                   "variable chosen in Grafana)");
  dash->add_option("--job", f->fleet.job, "Prometheus job that scrapes the agents")
      ->capture_default_str();
  dash->add_option("--title", f->title, "Dashboard title (default \"cardiac: GPU fleet\")");
  dash->add_option("--uid", f->uid, "Dashboard UID (default cardiac-gpu-fleet)");
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
  return with_export_slurm_gres(sub, [f, npd, dash](Context& ctx) -> int {
    if (!plain_name(f->fleet.job)) {
      ctx.err << "cardiac export: --job must be letters, digits and _ - . : only: '" << f->fleet.job
              << "'\n";
      return kExitUsage;
    }
    for (const auto* v : {&f->datasource, &f->uid}) {
      if (!v->empty() && !plain_name(*v)) {
        ctx.err << "cardiac export: --datasource and --uid must be letters, digits and _ - . : "
                   "only: '"
                << *v << "'\n";
        return kExitUsage;
      }
    }
    if (npd->parsed()) return run_export_npd(*f, ctx);
    if (dash->parsed()) return run_export_dashboard(*f, ctx);
    return run_export_rules(*f, ctx);
  });
}

}  // namespace cardiac::cli
