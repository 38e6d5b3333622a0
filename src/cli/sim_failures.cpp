// SPDX-License-Identifier: Apache-2.0
// Fitting the simulator's failure model from statistics files, and exporting a simulated history.
#include "cli/sim_failures.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/format.h"
#include "failstats/file_format.h"
#include "failstats/fit.h"
#include "failstats/from_sim.h"

namespace cardiac::cli {
namespace {

constexpr double kNsPerHour = 3600e9;

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Error::io(path, errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail(Error::io(path, errno));
  return text.str();
}

// The class a fitted component stands for (components are named by class title).
const failstats::FaultClass* class_of(const sim::Component& c) {
  for (const failstats::FaultClass& fc : failstats::kFaultClasses) {
    if (failstats::class_title(fc) == c.name) return &fc;
  }
  return nullptr;
}

}  // namespace

Result<FittedFailures> fit_failures_from(const std::vector<std::string>& paths) {
  FittedFailures out;
  for (const std::string& path : paths) {
    auto text = read_text(path);
    if (!text) return fail(text.error());
    auto s = failstats::parse_stats(*text, path);
    if (!s) return fail(s.error());
    if (!(s->gpu_days > 0)) {
      return fail(Error::invalid(
          "exposure.gpu_days is 0: the file observed no GPU for any time, so no rate follows "
          "from it (was the agent's store empty, or --since too recent?)",
          path));
    }
    if (s->sources.empty()) s->sources.push_back(path);
    failstats::merge_into(out.stats, *s);
    out.files.push_back(path);
  }
  auto model = failstats::fit_model(out.stats);
  if (!model) return fail(model.error());
  out.model = std::move(*model);
  out.model.name = paths.size() == 1 ? "fitted from " + paths[0]
                                     : fmt::format("fitted from {} files", paths.size());
  return out;
}

std::string fitted_text(const FittedFailures& f) {
  const failstats::FailureStats& s = f.stats;
  std::string out = fmt::format(
      "Failure model {}: {:.0f} GPU-days on {} nodes ({} GPUs), {} failures\n"
      "  {:<26} {:<6} {:>6}  {:>26}  {:>12}\n",
      f.model.name, s.gpu_days, s.nodes.size(), s.gpus, failstats::total(s.counts), "COMPONENT",
      "SCOPE", "COUNT", "PER 1000 GPU-DAYS (95%)", "REPAIR MEAN");
  for (const sim::Component& c : f.model.components) {
    const failstats::FaultClass* fc = class_of(c);
    const std::uint64_t count = fc ? s.counts[static_cast<std::size_t>(*fc)] : 0;
    const failstats::RateFigures r = failstats::rate_figures(count, s.gpu_days, s.gpus);
    out += fmt::format(
        "  {:<26} {:<6} {:>6}  {:>26}  {:>12}\n", c.name, sim::scope_name(c.scope), count,
        fmt::format("{:.3g} ({:.3g}-{:.3g})", r.per_1000, r.per_1000_low, r.per_1000_high),
        c.scope == sim::Scope::kJob
            ? std::string("-")
            : fmt::format("{:.3g} h", static_cast<double>(c.repair) / kNsPerHour));
  }
  out += fmt::format(
      "  repair time log-normal, sigma {:.3g}; lemon nodes {}; detection {}; no correlated "
      "failures, no planned maintenance\n\n",
      f.model.repair_sigma,
      f.model.lemon_fraction > 0
          ? fmt::format("{:.3g} % at {:.3g}x", 100 * f.model.lemon_fraction, f.model.lemon_factor)
          : std::string("none found"),
      "5 min");
  return out;
}

nlohmann::json fitted_json(const FittedFailures& f) {
  const failstats::FailureStats& s = f.stats;
  nlohmann::json components = nlohmann::json::array();
  for (const sim::Component& c : f.model.components) {
    const failstats::FaultClass* fc = class_of(c);
    const std::uint64_t count = fc ? s.counts[static_cast<std::size_t>(*fc)] : 0;
    const failstats::RateFigures r = failstats::rate_figures(count, s.gpu_days, s.gpus);
    components.push_back({{"name", c.name},
                          {"class", fc ? failstats::class_name(*fc) : ""},
                          {"category", c.category},
                          {"scope", sim::scope_name(c.scope)},
                          {"count", count},
                          {"per_gpu_day", c.per_gpu_day},
                          {"per_1000_gpu_days_ci95", {r.per_1000_low, r.per_1000_high}},
                          {"repair_hours", static_cast<double>(c.repair) / kNsPerHour}});
  }
  return {{"name", f.model.name},
          {"files", f.files},
          {"gpu_days", s.gpu_days},
          {"gpus", s.gpus},
          {"nodes", s.nodes.size()},
          {"components", components},
          {"repair_sigma", f.model.repair_sigma},
          {"lemon_fraction", f.model.lemon_fraction},
          {"lemon_factor", f.model.lemon_factor},
          {"detection_s", static_cast<double>(f.model.detection) / 1e9}};
}

Result<nlohmann::json> simulated_failures(const sim::SimConfig& config) {
  if (config.horizon <= 0) {
    return fail(
        Error::invalid("--failures-out needs --days: the exported exposure is the simulated span"));
  }
  // The topology the engine gives the failure process (engine.cpp).
  const unsigned nodes = config.cluster.nodes();
  const unsigned avg_gpus =
      std::max(1u, static_cast<unsigned>(std::lround(static_cast<double>(config.cluster.gpus()) /
                                                     std::max(1u, nodes))));
  const sim::Topology topo{.nodes = nodes,
                           .gpus_per_node = avg_gpus,
                           .nodes_per_domain = config.cluster.nodes_per_domain};
  return failstats::to_json(
      failstats::stats_from_simulation(config.failures, topo, config.seed, config.horizon));
}

}  // namespace cardiac::cli
