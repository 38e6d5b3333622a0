// SPDX-License-Identifier: Apache-2.0
#include "simserve/report.h"

#include <algorithm>
#include <functional>

#include "core/format.h"
#include "core/svg.h"
#include "core/text.h"

namespace cardiac::simserve {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string ms(double s) {
  if (s >= 10) return fmt::format("{:.1f} s", s);
  return fmt::format("{:.1f} ms", s * 1e3);
}

std::string pct(double f) {
  return fmt::format("{:.1f} %", 100 * f);
}

nlohmann::json percentiles_json(const Percentiles& p) {
  return {{"mean_s", p.mean}, {"p50_s", p.p50}, {"p99_s", p.p99}, {"count", p.count}};
}

struct Line {
  std::string label;
  std::function<std::string(const ServeResult&)> cell;
};

std::vector<Line> lines() {
  return {
      {"requests completed",
       [](const ServeResult& r) { return fmt::format("{} of {}", r.completed, r.requests); }},
      {"rejected (too long)", [](const ServeResult& r) { return fmt::format("{}", r.rejected); }},
      {"makespan", [](const ServeResult& r) { return ms(r.makespan_s); }},
      {"input tokens/s", [](const ServeResult& r) { return fmt::format("{:.0f}", r.input_tps); }},
      {"output tokens/s", [](const ServeResult& r) { return fmt::format("{:.0f}", r.output_tps); }},
      {"TTFT p50", [](const ServeResult& r) { return ms(r.ttft.p50); }},
      {"TTFT p99", [](const ServeResult& r) { return ms(r.ttft.p99); }},
      {"TPOT p50", [](const ServeResult& r) { return ms(r.tpot.p50); }},
      {"TPOT p99", [](const ServeResult& r) { return ms(r.tpot.p99); }},
      {"latency p50", [](const ServeResult& r) { return ms(r.e2e.p50); }},
      {"latency p99", [](const ServeResult& r) { return ms(r.e2e.p99); }},
      {"queue wait mean", [](const ServeResult& r) { return ms(r.queue_wait.mean); }},
      {"queue length mean", [](const ServeResult& r) { return fmt::format("{:.1f}", r.little_l); }},
      {"GPU busy", [](const ServeResult& r) { return pct(r.gpu_busy); }},
      {"decode batch mean",
       [](const ServeResult& r) { return fmt::format("{:.1f}", r.mean_batch); }},
      {"KV used / allocated",
       [](const ServeResult& r) {
         return fmt::format("{:.0f} / {:.0f}", r.kv_used_tokens, r.kv_allocated_tokens);
       }},
      {"KV waste", [](const ServeResult& r) { return pct(r.kv_waste); }},
      {"KV peak / budget",
       [](const ServeResult& r) {
         return fmt::format("{} / {}", r.kv_peak_allocated_tokens, r.kv_budget_tokens);
       }},
      {"padding waste", [](const ServeResult& r) { return pct(r.padding_waste); }},
      {"preemptions", [](const ServeResult& r) { return fmt::format("{}", r.preemptions); }},
      {"forward steps", [](const ServeResult& r) { return fmt::format("{}", r.steps); }},
  };
}

// One polyline per policy of the waiting requests over time.
std::string queue_chart(const std::vector<ServeResult>& runs) {
  constexpr int kW = 760, kH = 240, kL = 60, kR = 10, kT = 24, kB = 30;
  double tmax = 0;
  double vmax = 0;
  for (const auto& r : runs) {
    tmax = std::max(tmax, r.sample_interval_s * static_cast<double>(r.queue.size()));
    for (std::int64_t v : r.queue) vmax = std::max(vmax, static_cast<double>(v));
  }
  if (tmax <= 0) tmax = 1;
  if (vmax <= 0) vmax = 1;
  const svg::Scale x{0, tmax, kL, kW - kR};
  const svg::Scale y{0, vmax, kH - kB, kT};
  std::string s = svg::open(
      "svg",
      {{"xmlns", "http://www.w3.org/2000/svg"}, {"width", kW}, {"height", kH}, {"role", "img"}});
  s += svg::element("text", {{"x", kL}, {"y", 16}, {"font-weight", "bold"}},
                    "Requests waiting over time");
  s += svg::element(
      "line", {{"x1", kL}, {"y1", kH - kB}, {"x2", kW - kR}, {"y2", kH - kB}, {"stroke", "#999"}});
  s += svg::element("line",
                    {{"x1", kL}, {"y1", kT}, {"x2", kL}, {"y2", kH - kB}, {"stroke", "#999"}});
  s += svg::element("text", {{"x", 4}, {"y", kT + 4}, {"font-size", 11}},
                    fmt::format("{:.0f}", vmax));
  s += svg::element("text", {{"x", 4}, {"y", kH - kB}, {"font-size", 11}}, "0");
  s += svg::element("text",
                    {{"x", kW - kR}, {"y", kH - 8}, {"font-size", 11}, {"text-anchor", "end"}},
                    fmt::format("{:.1f} s", tmax));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::string pts;
    for (std::size_t k = 0; k < runs[i].queue.size(); ++k) {
      pts += svg::num(x.at(runs[i].sample_interval_s * static_cast<double>(k))) + "," +
             svg::num(y.at(static_cast<double>(runs[i].queue[k]))) + " ";
    }
    s += svg::open("polyline", {{"fill", "none"},
                                {"stroke", kColors[i % std::size(kColors)]},
                                {"stroke-width", "1.5"},
                                {"points", pts}});
    s += svg::element("title", {}, runs[i].policy) + svg::close("polyline");
  }
  return s + svg::close("svg");
}

// Horizontal bars, one group per policy, one bar per series.
struct Series {
  std::string name;
  std::function<double(const ServeResult&)> value;
};

std::string bar_chart(const std::vector<ServeResult>& runs, const std::string& title,
                      const std::vector<Series>& series,
                      const std::function<std::string(double)>& label) {
  constexpr int kW = 760, kLeft = 170, kBar = 16, kGap = 10, kTop = 28;
  double vmax = 0;
  for (const auto& r : runs) {
    for (const auto& se : series) vmax = std::max(vmax, se.value(r));
  }
  if (vmax <= 0) vmax = 1;
  const svg::Scale x{0, vmax, kLeft, kW - 90};
  const int group = static_cast<int>(series.size()) * kBar + kGap;
  const int height = kTop + static_cast<int>(runs.size()) * group + 20;
  std::string s = svg::open("svg", {{"xmlns", "http://www.w3.org/2000/svg"},
                                    {"width", kW},
                                    {"height", height},
                                    {"role", "img"}});
  s += svg::element("text", {{"x", 4}, {"y", 16}, {"font-weight", "bold"}}, title);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const int top = kTop + static_cast<int>(i) * group;
    s += svg::element("text", {{"x", 4}, {"y", top + kBar}, {"font-size", 12}}, runs[i].policy);
    for (std::size_t k = 0; k < series.size(); ++k) {
      const double v = series[k].value(runs[i]);
      const int y = top + static_cast<int>(k) * kBar;
      s += svg::element("rect", {{"x", kLeft},
                                 {"y", y},
                                 {"width", svg::num(x.at(v) - kLeft)},
                                 {"height", kBar - 2},
                                 {"fill", kColors[k % std::size(kColors)]}});
      s += svg::element("text",
                        {{"x", svg::num(x.at(v) + 4)}, {"y", y + kBar - 4}, {"font-size", 11}},
                        fmt::format("{} {}", series[k].name, label(v)));
    }
  }
  return s + svg::close("svg");
}

}  // namespace

std::string render_text(const std::vector<ServeResult>& runs, const std::string& headline) {
  std::string out = headline + "\n\n";
  std::size_t width = 22;
  for (const auto& r : runs) width = std::max(width, r.policy.size() + 2);
  out += fmt::format("  {:<22}", "");
  for (const auto& r : runs) out += fmt::format("{:>{}}", r.policy, width);
  out += "\n";
  for (const Line& l : lines()) {
    out += fmt::format("  {:<22}", l.label);
    for (const auto& r : runs) out += fmt::format("{:>{}}", l.cell(r), width);
    out += "\n";
  }
  if (!runs.empty() && runs.front().classes.size() > 1) {
    for (const auto& r : runs) {
      out += fmt::format("\n  {} by class (highest priority first)\n", r.policy);
      out += fmt::format("  {:<14}{:>10}{:>12}{:>12}{:>12}{:>12}{:>10}\n", "class", "requests",
                         "TTFT p50", "TTFT p99", "TPOT p99", "lat. p99", "SLO met");
      for (const auto& c : r.classes) {
        out += fmt::format("  {:<14}{:>10}{:>12}{:>12}{:>12}{:>12}{:>10}\n", c.name, c.requests,
                           ms(c.ttft.p50), ms(c.ttft.p99), ms(c.tpot.p99), ms(c.e2e.p99),
                           c.slo_met < 0 ? "-" : pct(c.slo_met));
      }
    }
  }
  return out;
}

nlohmann::json to_json(const std::vector<ServeResult>& runs, const nlohmann::json& setup) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : runs) {
    nlohmann::json classes = nlohmann::json::array();
    for (const auto& c : r.classes) {
      classes.push_back(
          {{"name", c.name},
           {"requests", c.requests},
           {"ttft", percentiles_json(c.ttft)},
           {"tpot", percentiles_json(c.tpot)},
           {"latency", percentiles_json(c.e2e)},
           {"slo_met", c.slo_met < 0 ? nlohmann::json() : nlohmann::json(c.slo_met)}});
    }
    list.push_back({{"policy", r.policy},
                    {"requests", r.requests},
                    {"completed", r.completed},
                    {"rejected", r.rejected},
                    {"preemptions", r.preemptions},
                    {"steps", r.steps},
                    {"makespan_s", r.makespan_s},
                    {"input_tokens", r.input_tokens},
                    {"output_tokens", r.output_tokens},
                    {"input_tokens_per_s", r.input_tps},
                    {"output_tokens_per_s", r.output_tps},
                    {"ttft", percentiles_json(r.ttft)},
                    {"tpot", percentiles_json(r.tpot)},
                    {"latency", percentiles_json(r.e2e)},
                    {"queue_wait", percentiles_json(r.queue_wait)},
                    {"gpu_busy", r.gpu_busy},
                    {"mean_batch", r.mean_batch},
                    {"kv",
                     {{"used_tokens", r.kv_used_tokens},
                      {"allocated_tokens", r.kv_allocated_tokens},
                      {"waste", r.kv_waste},
                      {"peak_allocated_tokens", r.kv_peak_allocated_tokens},
                      {"budget_tokens", r.kv_budget_tokens}}},
                    {"padding_waste", r.padding_waste},
                    {"little",
                     {{"queue_length", r.little_l},
                      {"admission_rate", r.little_lambda},
                      {"wait_s", r.little_w}}},
                    {"queue", {{"interval_s", r.sample_interval_s}, {"waiting", r.queue}}},
                    {"classes", classes}});
  }
  return {{"setup", setup}, {"runs", list}};
}

std::string render_html(const std::vector<ServeResult>& runs, const nlohmann::json& setup,
                        const std::string& headline) {
  std::string h =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>cardiac sim serve</title><style>"
      "body{font-family:sans-serif;margin:2em}td,th{padding:2px 12px;text-align:right}"
      "td:first-child,th:first-child{text-align:left}table{border-collapse:collapse}"
      "tr:nth-child(even){background:#f4f4f4}</style></head><body><h1>cardiac sim serve</h1><p>" +
      html_escape(headline) + "</p><h2>Setup</h2><table>";
  for (const auto& [k, v] : setup.items()) {
    h += "<tr><td>" + html_escape(k) + "</td><td>" +
         html_escape(v.is_string() ? v.get<std::string>() : v.dump()) + "</td></tr>";
  }
  h += "</table><h2>Policies</h2><table><tr><th></th>";
  for (const auto& r : runs) h += "<th>" + html_escape(r.policy) + "</th>";
  h += "</tr>";
  for (const Line& l : lines()) {
    h += "<tr><td>" + html_escape(l.label) + "</td>";
    for (const auto& r : runs) h += "<td>" + html_escape(l.cell(r)) + "</td>";
    h += "</tr>";
  }
  h += "</table><h2>Charts</h2>";
  auto tps = [](double v) { return fmt::format("{:.0f}/s", v); };
  h += bar_chart(runs, "Throughput (tokens/s)",
                 {{"out", [](const ServeResult& r) { return r.output_tps; }},
                  {"in", [](const ServeResult& r) { return r.input_tps; }}},
                 tps);
  h += "<br>" + bar_chart(runs, "Time to first token",
                          {{"p50", [](const ServeResult& r) { return r.ttft.p50; }},
                           {"p99", [](const ServeResult& r) { return r.ttft.p99; }}},
                          ms);
  h += "<br>" + bar_chart(runs, "Time per output token",
                          {{"p50", [](const ServeResult& r) { return r.tpot.p50; }},
                           {"p99", [](const ServeResult& r) { return r.tpot.p99; }}},
                          ms);
  h += "<br>" +
       bar_chart(runs, "KV cache per replica, time average (tokens)",
                 {{"used", [](const ServeResult& r) { return r.kv_used_tokens; }},
                  {"allocated", [](const ServeResult& r) { return r.kv_allocated_tokens; }}},
                 [](double v) { return fmt::format("{:.0f}", v); });
  h += "<br>" + queue_chart(runs) + "<p>";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    h += fmt::format("<span style=\"color:{}\">&#9632; {}</span> ", kColors[i % std::size(kColors)],
                     html_escape(runs[i].policy));
  }
  h += "</p>";
  if (!runs.empty() && runs.front().classes.size() > 1) {
    h += "<h2>Classes</h2><table><tr><th>policy</th><th>class</th><th>requests</th><th>TTFT "
         "p50</th><th>TTFT p99</th><th>TPOT p99</th><th>latency p99</th><th>SLO met</th></tr>";
    for (const auto& r : runs) {
      for (const auto& c : r.classes) {
        h += fmt::format(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>",
            html_escape(r.policy), html_escape(c.name), c.requests, ms(c.ttft.p50), ms(c.ttft.p99),
            ms(c.tpot.p99), ms(c.e2e.p99), c.slo_met < 0 ? "-" : pct(c.slo_met));
      }
    }
    h += "</table>";
  }
  return h + "</body></html>\n";
}

}  // namespace cardiac::simserve
