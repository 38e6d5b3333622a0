// SPDX-License-Identifier: Apache-2.0
// `cardiac fleet`: every node's GPUs with their verdicts, firing alerts and Xids, read through
// the Prometheus that scrapes the agents (docs/fleet.md). No cardiac-to-cardiac protocol: what
// Prometheus holds is what the fleet view shows, and a node it cannot scrape shows as unknown.
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "config/config.h"
#include "core/strings.h"
#include "core/time.h"
#include "fleet/read.h"

namespace cardiac::cli {
namespace {

struct FleetFlags {
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;
  std::string prometheus;
  std::string job;
  std::string timeout;
  bool all = false;
  bool json = false;
};

Result<fleet::PrometheusOptions> options_from(const FleetFlags& f) {
  auto cfg = config::load_config(f.config, f.config_named);
  if (!cfg) return fail(cfg.error());
  fleet::PrometheusOptions o;
  o.url = f.prometheus.empty() ? cfg->fleet.prometheus : f.prometheus;
  if (o.url.empty()) {
    return fail(Error::invalid(
        "no Prometheus to read: pass --prometheus http://HOST:9090 or set [fleet] prometheus in " +
        f.config));
  }
  o.timeout = cfg->fleet.timeout;
  if (!f.timeout.empty()) {
    auto t = parse_duration_ns(f.timeout);
    if (!t || *t <= 0) {
      return fail(
          Error::invalid(fmt::format("--timeout: not a duration: '{}' (e.g. 5s)", f.timeout)));
    }
    o.timeout = *t;
  }
  if (!cfg->fleet.bearer_token_file.empty()) {
    std::ifstream in(cfg->fleet.bearer_token_file);
    if (!in) return fail(Error::io(cfg->fleet.bearer_token_file, errno));
    std::stringstream ss;
    ss << in.rdbuf();
    o.bearer_token = std::string(trim(ss.str()));
  }
  return o;
}

}  // namespace

Runner register_fleet(CLI::App& sub) {
  auto f = std::make_shared<FleetFlags>();
  sub.add_option("--prometheus", f->prometheus,
                 "Prometheus that scrapes the agents, e.g. http://prometheus:9090 (default: "
                 "[fleet] prometheus)");
  sub.add_option("--job", f->job, "The agents' scrape job (default: [fleet] job, \"cardiac\")");
  sub.add_option("--timeout", f->timeout, "Deadline for each answer (default: [fleet] timeout)");
  sub.add_option("--config", f->config, "Configuration file")->capture_default_str();
  sub.add_flag("--all", f->all, "List every GPU, not only those that are not OK");
  sub.add_flag("--json", f->json, "JSON output (cardiac.fleet/v1)");
  sub.footer(
      "Exit status: 0 every node OK, 1 a node WARN or FAIL, 3 Prometheus could not be read or a "
      "node could not be scraped (its state is unknown).");
  return [f, &sub](Context& ctx) {
    f->config_named = sub.count("--config") > 0;
    auto opts = options_from(*f);
    if (!opts) {
      ctx.err << "cardiac fleet: " << opts.error().what() << "\n";
      return opts.error().code == ErrorCode::kInvalidArgument ? int{kExitUsage}
                                                              : int{kExitCannotRun};
    }
    auto prom = fleet::Prometheus::connect(*opts);
    if (!prom) {
      ctx.err << "cardiac fleet: " << prom.error().what() << "\n";
      return int{kExitUsage};
    }
    auto cfg_job = config::load_config(f->config, f->config_named);
    const std::string job = !f->job.empty() ? f->job : cfg_job ? cfg_job->fleet.job : "cardiac";
    auto view = fleet::read_fleet(*prom, job);
    if (!view) {
      ctx.err << "cardiac fleet: " << view.error().what() << "\n";
      return int{kExitCannotRun};
    }
    if (f->json) {
      ctx.out << fleet::to_json(*view).dump(2) << "\n";
    } else {
      ctx.out << fleet::render_text(*view, f->all);
    }
    switch (view->verdict) {
      case fleet::Verdict::kOk:
        return int{kExitOk};
      case fleet::Verdict::kWarn:
      case fleet::Verdict::kFail:
        return int{kExitFindings};
      case fleet::Verdict::kUnknown:
        break;
    }
    return int{kExitCannotRun};
  };
}

}  // namespace cardiac::cli
