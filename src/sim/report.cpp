// SPDX-License-Identifier: Apache-2.0
// Rendering simulation results: table, JSON, CSV and HTML with inline SVG charts.
#include "sim/report.h"

#include "core/format.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "core/svg.h"
#include "core/text.h"

namespace cardiac::sim {
namespace {

nlohmann::json quantiles_json(const Quantiles& q) {
  return {{"mean", q.mean}, {"median", q.median}, {"p99", q.p99}};
}

std::string secs(TimeNs t) {
  if (t < 0) return "";
  return fmt::format("{:.3f}", static_cast<double>(t) / 1e9);
}

std::string human_s(double s) {
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// One line per run of `value` over time, on shared axes.
std::string svg_chart(const std::vector<NamedResult>& runs, const std::string& title,
                      const std::function<double(const SeriesPoint&)>& value,
                      const std::string& unit) {
  constexpr int kW = 760, kH = 220, kL = 60, kR = 10, kT = 24, kB = 30;
  double tmax = 0, vmax = 0;
  for (const auto& r : runs) {
    for (const SeriesPoint& p : r.result.series) {
      tmax = std::max(tmax, static_cast<double>(p.time) / 1e9);
      vmax = std::max(vmax, value(p));
    }
  }
  if (tmax <= 0) tmax = 1;
  if (vmax <= 0) vmax = 1;
  auto x = [&](double t) { return kL + (kW - kL - kR) * t / tmax; };
  auto y = [&](double v) { return kT + (kH - kT - kB) * (1 - v / vmax); };
  std::string svg = svg::open(
      "svg",
      {{"xmlns", "http://www.w3.org/2000/svg"}, {"width", kW}, {"height", kH}, {"role", "img"}});
  svg += svg::element("text", {{"x", kL}, {"y", 16}, {"font-weight", "bold"}}, title);
  // Axes: time along the bottom, the value up the left.
  svg += svg::element(
      "line", {{"x1", kL}, {"y1", kH - kB}, {"x2", kW - kR}, {"y2", kH - kB}, {"stroke", "#999"}});
  svg += svg::element("line",
                      {{"x1", kL}, {"y1", kT}, {"x2", kL}, {"y2", kH - kB}, {"stroke", "#999"}});
  svg += svg::element("text", {{"x", 4}, {"y", kT + 4}, {"font-size", 11}},
                      fmt::format("{:.4g} {}", vmax, unit));
  svg += svg::element("text", {{"x", 4}, {"y", kH - kB}, {"font-size", 11}}, "0");
  svg += svg::element("text",
                      {{"x", kW - kR}, {"y", kH - 8}, {"font-size", 11}, {"text-anchor", "end"}},
                      human_s(tmax));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::string pts;
    for (const SeriesPoint& p : runs[i].result.series) {
      pts += svg::num(x(static_cast<double>(p.time) / 1e9)) + "," + svg::num(y(value(p))) + " ";
    }
    svg += svg::open("polyline", {{"fill", "none"},
                                  {"stroke", kColors[i % std::size(kColors)]},
                                  {"stroke-width", "1.5"},
                                  {"points", pts}});
    svg += svg::element("title", {}, runs[i].label) + svg::close("polyline");
  }
  return svg + svg::close("svg");
}

struct Row {
  const char* name;
  std::function<std::string(const Summary&)> cell;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> kRows = {
      {"jobs completed",
       [](const Summary& s) { return fmt::format("{}/{}", s.completed, s.jobs); }},
      {"never started (impossible)",
       [](const Summary& s) { return fmt::format("{} ({})", s.never_started, s.impossible); }},
      {"utilization (allocated)",
       [](const Summary& s) { return fmt::format("{:.1f} %", 100 * s.utilization_allocated); }},
      {"utilization (productive)",
       [](const Summary& s) { return fmt::format("{:.1f} %", 100 * s.utilization_productive); }},
      {"wait mean / median / p99",
       [](const Summary& s) {
         return fmt::format("{} / {} / {}", human_s(s.wait_s.mean), human_s(s.wait_s.median),
                            human_s(s.wait_s.p99));
       }},
      {"JCT mean / median / p99",
       [](const Summary& s) {
         return fmt::format("{} / {} / {}", human_s(s.jct_s.mean), human_s(s.jct_s.median),
                            human_s(s.jct_s.p99));
       }},
      {"slowdown mean / p99",
       [](const Summary& s) {
         return fmt::format("{:.2f} / {:.1f}", s.slowdown.mean, s.slowdown.p99);
       }},
      {"interruptions", [](const Summary& s) { return fmt::format("{}", s.interruptions); }},
      {"lost GPU-hours", [](const Summary& s) { return fmt::format("{:.0f}", s.lost_gpu_h); }},
      {"goodput", [](const Summary& s) { return fmt::format("{:.3f}", s.goodput); }},
      {"ETTR (all jobs)", [](const Summary& s) { return fmt::format("{:.3f}", s.ettr); }},
      {"fairness (Jain)", [](const Summary& s) { return fmt::format("{:.3f}", s.jain_fairness); }},
      {"events", [](const Summary& s) { return fmt::format("{}", s.events); }},
  };
  return kRows;
}

// Shown only when a run has stragglers, so that runs without them print as they always did.
const std::vector<Row>& slow_rows() {
  static const std::vector<Row> kRows = {
      {"stragglers (detected)",
       [](const Summary& s) {
         return fmt::format("{} ({})", s.stragglers, s.stragglers_detected);
       }},
      {"lost GPU-h: slow GPUs",
       [](const Summary& s) { return fmt::format("{:.0f}", s.slow_gpu_h); }},
      {"lost GPU-h: failures, maint.",
       [](const Summary& s) { return fmt::format("{:.0f}", s.failure_lost_gpu_h); }},
  };
  return kRows;
}

// The rows for these runs: the straggler rows after "lost GPU-hours" when any run has them.
std::vector<const Row*> rows_for(const std::vector<NamedResult>& runs) {
  const bool slow = std::any_of(runs.begin(), runs.end(),
                                [](const NamedResult& r) { return r.result.summary.fail_slow; });
  std::vector<const Row*> out;
  for (const Row& row : rows()) {
    out.push_back(&row);
    if (slow && std::string_view(row.name) == "lost GPU-hours") {
      for (const Row& extra : slow_rows()) out.push_back(&extra);
    }
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const Summary& s) {
  nlohmann::json users = nlohmann::json::object();
  for (const auto& [name, u] : s.users) {
    users[name] = {{"demand_gpu_h", u.demand_gpu_h},
                   {"received_gpu_h", u.received_gpu_h},
                   {"entitled_gpu_h", u.entitled_gpu_h}};
  }
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& [cls, sc] : s.by_size) {
    sizes.push_back({{"gpus_up_to", cls},
                     {"jobs", sc.jobs},
                     {"ettr_mean", sc.ettr_mean},
                     {"restarts", sc.interruptions}});
  }
  nlohmann::json out = {{"jobs", s.jobs},
                        {"completed", s.completed},
                        {"timed_out", s.timed_out},
                        {"unfinished", s.unfinished},
                        {"never_started", s.never_started},
                        {"impossible", s.impossible},
                        {"span_s", s.span_s},
                        {"cluster_gpus", s.cluster_gpus},
                        {"utilization_allocated", s.utilization_allocated},
                        {"utilization_productive", s.utilization_productive},
                        {"wait_s", quantiles_json(s.wait_s)},
                        {"jct_s", quantiles_json(s.jct_s)},
                        {"slowdown", quantiles_json(s.slowdown)},
                        {"interruptions", s.interruptions},
                        {"interruptions_by_cause", s.interruptions_by_cause},
                        {"failures", s.failures},
                        {"failures_by_category", s.failures_by_category},
                        {"allocated_gpu_h", s.allocated_gpu_h},
                        {"productive_gpu_h", s.productive_gpu_h},
                        {"lost_gpu_h",
                         {{"total", s.lost_gpu_h},
                          {"lost_work", s.lost_work_gpu_h},
                          {"restart", s.restart_gpu_h},
                          {"hung", s.hung_gpu_h},
                          {"checkpoint", s.checkpoint_gpu_h}}},
                        {"goodput", s.goodput},
                        {"ettr", s.ettr},
                        {"ettr_mean", s.ettr_mean},
                        {"ettr_by_size", sizes},
                        {"jain_fairness", s.jain_fairness},
                        {"users", users},
                        {"events", s.events},
                        {"passes", s.passes}};
  if (s.fail_slow) {
    out["fail_slow"] = {{"stragglers", s.stragglers},
                        {"detected", s.stragglers_detected},
                        {"lost_gpu_h",
                         {{"total", s.slow_gpu_h},
                          {"pace", s.slow_pace_gpu_h},
                          {"lost_work", s.slow_lost_work_gpu_h},
                          {"restart", s.slow_restart_gpu_h}}},
                        {"failures_lost_gpu_h", s.failure_lost_gpu_h}};
  }
  return out;
}

nlohmann::json to_json(const std::vector<NamedResult>& runs, const nlohmann::json& setup) {
  nlohmann::json out = {{"setup", setup}, {"runs", nlohmann::json::array()}};
  for (const auto& r : runs) {
    out["runs"].push_back(
        {{"label", r.label}, {"policy", r.result.policy}, {"summary", to_json(r.result.summary)}});
  }
  return out;
}

std::string render_table(const std::vector<NamedResult>& runs) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> width(runs.size() + 1, 0);
  std::vector<std::string> head = {""};
  for (const auto& r : runs) head.push_back(r.label);
  cells.push_back(head);
  for (const Row* row : rows_for(runs)) {
    std::vector<std::string> line = {row->name};
    for (const auto& r : runs) line.push_back(row->cell(r.result.summary));
    cells.push_back(std::move(line));
  }
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::string out;
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      out += i == 0 ? fmt::format("{:<{}}", line[i], width[i])
                    : fmt::format("  {:>{}}", line[i], width[i]);
    }
    out += '\n';
  }
  return out;
}

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string jobs_csv(const std::vector<NamedResult>& runs) {
  const bool many = runs.size() > 1;
  std::string out = many ? "policy," : "";
  out += "job_id,submit_time,start_time,end_time,gpus,restarts\n";
  for (const auto& r : runs) {
    for (const JobRecord& j : r.result.jobs) {
      if (many) out += r.label + ",";
      out += fmt::format("{},{},{},{},{},{}\n",
                         csv_field(j.name.empty() ? std::to_string(j.id) : j.name), secs(j.submit),
                         secs(j.start), secs(j.end), j.gpus, j.restarts);
    }
  }
  return out;
}

std::string series_csv(const std::vector<NamedResult>& runs) {
  std::string out =
      "policy,time,allocated_gpus,productive_gpus,down_gpus,pending,running,interruptions\n";
  for (const auto& r : runs) {
    for (const SeriesPoint& p : r.result.series) {
      out += fmt::format("{},{},{},{},{},{},{},{}\n", r.label, secs(p.time), p.allocated_gpus,
                         p.productive_gpus, p.down_gpus, p.pending, p.running, p.interruptions);
    }
  }
  return out;
}

std::string render_html(const std::vector<NamedResult>& runs, const nlohmann::json& setup) {
  std::string h =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>cardiac sim</title><style>"
      "body{font-family:sans-serif;margin:2em;max-width:900px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:"
      "left}.key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px}"
      "</style></head><body><h1>cardiac sim</h1><h2>Setup</h2><pre>" +
      html_escape(setup.dump(2)) + "</pre><h2>Comparison</h2><table><tr><th></th>";
  for (const auto& r : runs) h += "<th>" + html_escape(r.label) + "</th>";
  h += "</tr>";
  for (const Row* row : rows_for(runs)) {
    h += std::string("<tr><td>") + row->name + "</td>";
    for (const auto& r : runs) h += "<td>" + html_escape(row->cell(r.result.summary)) + "</td>";
    h += "</tr>";
  }
  h += "</table><p class=\"key\">";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    h += fmt::format("<span style=\"background:{}\"></span>{}", kColors[i % std::size(kColors)],
                     html_escape(runs[i].label));
  }
  h += "</p><h2>Over time</h2>";
  h += svg_chart(
      runs, "GPU utilization (allocated)",
      [&](const SeriesPoint& p) {
        return 100.0 * p.allocated_gpus / std::max(1.0, runs[0].result.summary.cluster_gpus);
      },
      "%");
  h += svg_chart(
      runs, "GPU utilization (productive)",
      [&](const SeriesPoint& p) {
        return 100.0 * p.productive_gpus / std::max(1.0, runs[0].result.summary.cluster_gpus);
      },
      "%");
  h += svg_chart(
      runs, "Queue length", [](const SeriesPoint& p) { return static_cast<double>(p.pending); },
      "jobs");
  h += svg_chart(
      runs, "Interruptions per step",
      [](const SeriesPoint& p) { return static_cast<double>(p.interruptions); }, "");
  h += svg_chart(
      runs, "GPUs down", [](const SeriesPoint& p) { return static_cast<double>(p.down_gpus); },
      "GPUs");
  h += "<h2>ETTR by job size</h2><table><tr><th>GPUs up to</th>";
  for (const auto& r : runs) h += "<th>" + html_escape(r.label) + "</th>";
  h += "</tr>";
  std::map<unsigned, int> classes;
  for (const auto& r : runs) {
    for (const auto& [cls, sc] : r.result.summary.by_size) classes[cls] = 0;
  }
  for (const auto& [cls, unused] : classes) {
    h += fmt::format("<tr><td>{}</td>", cls);
    for (const auto& r : runs) {
      auto it = r.result.summary.by_size.find(cls);
      h += it == r.result.summary.by_size.end()
               ? std::string("<td></td>")
               : fmt::format("<td>{:.3f} ({} jobs)</td>", it->second.ettr_mean, it->second.jobs);
    }
    h += "</tr>";
  }
  h += "</table><h2>Interruptions by cause</h2><table><tr><th>cause</th>";
  for (const auto& r : runs) h += "<th>" + html_escape(r.label) + "</th>";
  h += "</tr>";
  std::map<std::string, int> causes;
  for (const auto& r : runs) {
    for (const auto& [c, n] : r.result.summary.interruptions_by_cause) causes[c] = 0;
  }
  for (const auto& [c, unused] : causes) {
    h += "<tr><td>" + html_escape(c) + "</td>";
    for (const auto& r : runs) {
      auto it = r.result.summary.interruptions_by_cause.find(c);
      h += fmt::format("<td>{}</td>",
                       it == r.result.summary.interruptions_by_cause.end() ? 0 : it->second);
    }
    h += "</tr>";
  }
  return h + "</table></body></html>\n";
}

}  // namespace cardiac::sim
