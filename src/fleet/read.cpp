// SPDX-License-Identifier: Apache-2.0
#include "fleet/read.h"

#include <set>

#include <fmt/format.h>

#include "core/units.h"

namespace cardiac::fleet {

Result<FleetView> read_fleet(const Prometheus& prometheus, const std::string& job) {
  auto targets = prometheus.targets();
  if (!targets) return fail(targets.error());
  std::set<std::string> jobs;
  for (const auto& t : *targets) {
    if (t.is_object() && t.contains("scrapePool") && t["scrapePool"].is_string()) {
      jobs.insert(t["scrapePool"].get<std::string>());
    }
  }
  if (!jobs.contains(job)) {
    std::string known;
    for (const std::string& j : jobs) known += (known.empty() ? "" : ", ") + j;
    return fail(Error::not_found(
        fmt::format("no scrape job \"{}\" (its jobs: {}); set [fleet] job or --job", job,
                    known.empty() ? "none" : known),
        "Prometheus at " + prometheus.url()));
  }
  auto series = prometheus.query(series_query(job));
  if (!series) return fail(series.error());
  auto alerts = prometheus.alerts();
  if (!alerts) return fail(alerts.error());
  return build_view(prometheus.url(), job, *targets, *series, *alerts);
}

namespace {

std::string upper(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string gpu_line(const FleetGpu& g) {
  std::string figures;
  if (g.utilization) figures += fmt::format(" util {:3.0f} %", *g.utilization * 100);
  if (g.memory_used && g.memory_total && *g.memory_total > 0) {
    figures += fmt::format("  mem {:3.0f} %", *g.memory_used / *g.memory_total * 100);
  }
  if (g.temperature) figures += fmt::format("  {:.0f} °C", *g.temperature);
  if (g.power) figures += fmt::format("  {:.0f} W", *g.power);
  std::string xids;
  for (const auto& [code, count] : g.xids) {
    xids += fmt::format("{}Xid {} ×{:.0f}", xids.empty() ? "" : ", ", code, count);
  }
  return fmt::format("    GPU {:<2} {:<7}{}{}{}{}\n", g.index, upper(verdict_name(g.verdict)),
                     figures, xids.empty() ? "" : "  " + xids, g.reason.empty() ? "" : "  — ",
                     g.reason);
}

}  // namespace

std::string render_text(const FleetView& view, bool all_gpus) {
  std::string out =
      fmt::format("Fleet: {} ({} nodes, job \"{}\" of {})\n", upper(verdict_name(view.verdict)),
                  view.nodes.size(), view.job, view.prometheus);
  std::size_t width = 4;
  for (const FleetNode& n : view.nodes) width = std::max(width, n.hostname.size());
  out += fmt::format("\n{:<{}}  {:<7}  {:>4}  {:>6}  {}\n", "NODE", width, "VERDICT", "GPUS",
                     "ALERTS", "WHY");
  for (const FleetNode& n : view.nodes) {
    out += fmt::format("{:<{}}  {:<7}  {:>4}  {:>6}  {}\n", n.hostname, width,
                       upper(verdict_name(n.verdict)),
                       n.scraped ? std::to_string(n.gpus.size()) : std::string("-"),
                       n.alerts.size(), n.reason.empty() ? "OK" : n.reason);
  }
  for (const FleetNode& n : view.nodes) {
    const bool fine = n.verdict == Verdict::kOk && n.alerts.empty();
    if (fine && !all_gpus) continue;
    if (!n.scraped) continue;
    out += fmt::format("\n{} ({})\n", n.hostname, n.instance);
    for (const FleetGpu& g : n.gpus) {
      if (all_gpus || g.verdict != Verdict::kOk || !g.xids.empty()) out += gpu_line(g);
    }
    for (const FleetAlert& a : n.alerts) {
      out += fmt::format("    alert {} [{}]{}: {}\n", a.name, a.severity,
                         a.gpu ? fmt::format(" GPU {}", *a.gpu) : std::string(), a.summary);
    }
  }
  if (!view.fleet_alerts.empty()) {
    out += "\nFleet alerts\n";
    for (const FleetAlert& a : view.fleet_alerts) {
      out += fmt::format("    {} [{}]: {}\n", a.name, a.severity, a.summary);
    }
  }
  if (view.nodes.empty()) out += "\nThe job lists no targets: no node was looked at.\n";
  return out;
}

}  // namespace cardiac::fleet
