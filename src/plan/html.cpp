// SPDX-License-Identifier: Apache-2.0
#include "plan/html.h"

#include <algorithm>

#include "core/format.h"
#include "core/svg.h"
#include "core/text.h"

namespace cardiac::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kWidth = 640;
constexpr double kHeight = 260;
constexpr double kLeft = 60;
constexpr double kBottom = 40;
constexpr double kTop = 20;

std::string growth_chart(const HtmlPlan& p) {
  using svg::Attr;
  std::int64_t top = p.options.concurrency;
  for (const auto& g : p.growth) top = std::max(top, g.max_concurrency);
  const svg::Scale y{0, static_cast<double>(top) * 1.1, kHeight - kBottom, kTop};
  const double slot = (kWidth - kLeft) / static_cast<double>(std::max<size_t>(p.growth.size(), 1));
  std::string s = svg::open("svg", {{"xmlns", "http://www.w3.org/2000/svg"},
                                    {"viewBox", fmt::format("0 0 {} {}", kWidth, kHeight)},
                                    {"width", kWidth},
                                    {"height", kHeight}});
  for (size_t i = 0; i < p.growth.size(); ++i) {
    const auto& g = p.growth[i];
    const double x = kLeft + slot * static_cast<double>(i) + slot * 0.15;
    const double top_px = y.at(static_cast<double>(g.max_concurrency));
    s += svg::element("rect", {{"x", svg::num(x)},
                               {"y", svg::num(top_px)},
                               {"width", svg::num(slot * 0.7)},
                               {"height", svg::num(y.at(0) - top_px)},
                               {"fill", g.fits ? "#4a8" : "#c44"}});
    s += svg::element("text",
                      {{"x", svg::num(x + slot * 0.35)},
                       {"y", svg::num(kHeight - kBottom + 16)},
                       {"text-anchor", "middle"},
                       {"font-size", 11}},
                      fmt::format("{}", g.context));
    s += svg::element("text",
                      {{"x", svg::num(x + slot * 0.35)},
                       {"y", svg::num(top_px - 4)},
                       {"text-anchor", "middle"},
                       {"font-size", 11}},
                      fmt::format("{}", g.max_concurrency));
  }
  const double need = y.at(static_cast<double>(p.options.concurrency));
  s += svg::element("line", {{"x1", svg::num(kLeft)},
                             {"y1", svg::num(need)},
                             {"x2", svg::num(kWidth)},
                             {"y2", svg::num(need)},
                             {"stroke", "#333"},
                             {"stroke-dasharray", "4 3"}});
  s += svg::element("text", {{"x", svg::num(4)}, {"y", svg::num(need + 4)}, {"font-size", 11}},
                    fmt::format("need {}", p.options.concurrency));
  s += svg::element("text",
                    {{"x", svg::num(kLeft + (kWidth - kLeft) / 2)},
                     {"y", svg::num(kHeight - 6)},
                     {"text-anchor", "middle"},
                     {"font-size", 12}},
                    "context (tokens per sequence); bars: sequences whose KV cache fits");
  s += svg::close("svg");
  return s;
}

}  // namespace

std::string render_html(const HtmlPlan& p) {
  const auto& m = p.memory;
  auto row = [](const char* what, double bytes) {
    return fmt::format("<tr><td>{}</td><td>{:.2f} GiB</td></tr>", what, bytes / kGiB);
  };
  std::string h =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>cardiac plan</title><style>"
      "body{font-family:sans-serif;margin:2em}td{padding:2px 12px}pre{background:#f4f4f4;"
      "padding:8px}</style></head><body><h1>" +
      html_escape(p.title) + "</h1>";
  h += fmt::format("<h2>Per GPU (tensor parallel {} × pipeline parallel {})</h2><table>",
                   p.options.tp, p.options.pp);
  h += row("engine budget", m.budget) + row("weights", m.weights) +
       row("activation peak", m.activation_peak) + row("runtime overhead", m.non_torch) +
       row("KV cache", m.kv_budget) + "</table>";
  h += "<h2>Prompt growth</h2>" + growth_chart(p);
  h += "<h2>Verdict</h2><pre>" + html_escape(p.verdict) + "</pre></body></html>\n";
  return h;
}

}  // namespace cardiac::plan
