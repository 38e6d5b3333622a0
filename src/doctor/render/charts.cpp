// SPDX-License-Identifier: Apache-2.0
// Inline SVG charts for the HTML report, drawn through core/svg.h.
#include "doctor/render/charts.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/format.h"
#include "core/svg.h"
#include "core/time.h"
#include "doctor/render/render.h"

namespace cardiac::doctor {
namespace {

constexpr DurationNs kDayNs = kNsPerSec * 24 * 3600;

// "17:34:19" within a day; with the date when the range spans more than one.
std::string time_label(TimeNs t, bool with_date) {
  std::time_t secs = static_cast<std::time_t>(t / kNsPerSec);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return with_date ? fmt::format("{:%m-%d %H:%M}", tm) : fmt::format("{:%H:%M:%S}", tm);
}

using svg::num;
using svg::Scale;

// The time axis' two labels: the start at `x0`, the end right-aligned at `x1`.
std::string time_labels(double x0, double x1, double y, TimeNs t0, TimeNs t1, bool with_date) {
  return svg::element("text", {{"x", x0}, {"y", num(y)}, {"font-size", 11}, {"fill", "#4a5568"}},
                      time_label(t0, with_date)) +
         "\n" +
         svg::element("text",
                      {{"x", num(x1)},
                       {"y", num(y)},
                       {"font-size", 11},
                       {"text-anchor", "end"},
                       {"fill", "#4a5568"}},
                      time_label(t1, with_date)) +
         "\n";
}

// Fixed colours per event kind so the same kind looks the same in every report.
const char* kind_colour(kmsg::EventKind kind) {
  using kmsg::EventKind;
  switch (kind) {
    case EventKind::kXid:
    case EventKind::kFallenOffBus:
      return "#c53030";
    case EventKind::kSxid:
    case EventKind::kNvlink:
      return "#b7791f";
    case EventKind::kAer:
      return "#dd6b20";
    case EventKind::kHungTask:
      return "#6b46c1";
    case EventKind::kGspTimeout:
    case EventKind::kResetRequired:
    case EventKind::kInitFailure:
      return "#b83280";
    case EventKind::kIb:
      return "#2b6cb0";
    case EventKind::kGpuMap:
    case EventKind::kFabricManager:
      break;
  }
  return "#718096";
}

}  // namespace

std::string svg_line_chart(const Evidence& e, int width, int height) {
  std::vector<std::pair<TimeNs, double>> pts;
  for (const auto& p : e.series) {
    if (std::isfinite(p.second)) pts.push_back(p);
  }
  if (pts.empty()) return {};
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const double w = std::max(width, 160), h = std::max(height, 80);
  const double left = 64, right = 16, top = 24, bottom = 24;

  auto [mn, mx] = std::minmax_element(
      pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  double data_lo = mn->second, data_hi = mx->second;
  double lo = data_lo, hi = data_hi;
  if (e.threshold && std::isfinite(*e.threshold)) {
    lo = std::min(lo, *e.threshold);
    hi = std::max(hi, *e.threshold);
  }
  if (lo == hi) {
    // A flat line in the middle reads as "constant"; at the edge it would read as "at limit".
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  TimeNs t0 = pts.front().first, t1 = pts.back().first;
  Scale ys{lo, hi, h - bottom, top};
  Scale xs{static_cast<double>(t0), static_cast<double>(t1), left, w - right};
  std::string unit = e.unit.empty() ? "" : " " + e.unit;
  std::string name = e.metric.empty() ? std::string("value") : e.metric;

  std::string out = svg::open("svg", {{"class", "chart"},
                                      {"viewBox", fmt::format("0 0 {} {}", w, h)},
                                      {"width", w},
                                      {"height", h},
                                      {"role", "img"},
                                      {"aria-label", name}});
  out += "\n" +
         svg::element(
             "title", {},
             fmt::format("{}{}: {} to {}", name, unit, format_iso8601(t0), format_iso8601(t1))) +
         "\n";
  out +=
      svg::element(
          "text",
          {{"x", left}, {"y", 14}, {"font-size", 12}, {"font-weight", "bold"}, {"fill", "#2d3748"}},
          name + (e.unit.empty() ? "" : " (" + e.unit + ")")) +
      "\n";
  out += svg::element("text",
                      {{"x", num(w - right)},
                       {"y", 14},
                       {"font-size", 11},
                       {"text-anchor", "end"},
                       {"fill", "#4a5568"}},
                      fmt::format("min {} · max {}{}", detail::format_number(data_lo),
                                  detail::format_number(data_hi), unit)) +
         "\n";
  // Axes, then their labels: value range on the left, time range below.
  out +=
      svg::element("path",
                   {{"d", fmt::format("M{} {}V{}H{}", left, top, num(h - bottom), num(w - right))},
                    {"fill", "none"},
                    {"stroke", "#a0aec0"},
                    {"stroke-width", 1}}) +
      "\n";
  for (double v : {lo, hi}) {
    out += svg::element("text",
                        {{"x", left - 6},
                         {"y", num(ys.at(v) + 4)},
                         {"font-size", 11},
                         {"text-anchor", "end"},
                         {"fill", "#4a5568"}},
                        detail::format_number(v) + unit) +
           "\n";
  }
  bool with_date = t1 - t0 > kDayNs;
  out += time_labels(left, w - right, h - 6, t0, t1, with_date);
  if (e.threshold && std::isfinite(*e.threshold)) {
    double y = ys.at(*e.threshold);
    out += svg::element("line", {{"class", "threshold"},
                                 {"x1", left},
                                 {"y1", num(y)},
                                 {"x2", num(w - right)},
                                 {"y2", num(y)},
                                 {"stroke", "#c53030"},
                                 {"stroke-width", 1},
                                 {"stroke-dasharray", "5 4"}}) +
           "\n";
    out += svg::element("text",
                        {{"x", num(w - right)},
                         {"y", num(y - 3)},
                         {"font-size", 10},
                         {"text-anchor", "end"},
                         {"fill", "#c53030"}},
                        "threshold " + detail::format_number(*e.threshold) + unit) +
           "\n";
  }
  if (pts.size() == 1) {
    out += svg::element("circle", {{"cx", num(xs.at(static_cast<double>(t0)))},
                                   {"cy", num(ys.at(pts[0].second))},
                                   {"r", 3},
                                   {"fill", "#2b6cb0"}}) +
           "\n";
  } else {
    std::string points;
    for (const auto& [t, v] : pts) {
      if (!points.empty()) points += ' ';
      points += num(xs.at(static_cast<double>(t))) + "," + num(ys.at(v));
    }
    out += svg::element("polyline", {{"class", "series"},
                                     {"points", points},
                                     {"fill", "none"},
                                     {"stroke", "#2b6cb0"},
                                     {"stroke-width", "1.5"},
                                     {"stroke-linejoin", "round"}}) +
           "\n";
  }
  return out + svg::close("svg") + "\n";
}

std::string svg_event_timeline(const std::vector<kmsg::KernelEvent>& events, int width,
                               std::size_t max_dots) {
  std::vector<const kmsg::KernelEvent*> timed;
  std::size_t left_out = 0;
  for (const auto& ev : events) {
    if (!ev.time_ns) continue;
    if (timed.size() < max_dots) {
      timed.push_back(&ev);
    } else {
      ++left_out;
    }
  }
  if (timed.empty()) return {};
  std::vector<kmsg::EventKind> kinds;
  TimeNs t0 = *timed.front()->time_ns, t1 = t0;
  for (const auto* ev : timed) {
    if (std::find(kinds.begin(), kinds.end(), ev->kind) == kinds.end()) kinds.push_back(ev->kind);
    t0 = std::min(t0, *ev->time_ns);
    t1 = std::max(t1, *ev->time_ns);
  }
  const double w = std::max(width, 240), row = 22, left = 120, right = 16, top = 8;
  const double h = top + row * static_cast<double>(kinds.size()) + 24;
  Scale xs{static_cast<double>(t0), static_cast<double>(t1), left, w - right};

  std::string out = svg::open("svg", {{"class", "timeline"},
                                      {"viewBox", fmt::format("0 0 {} {}", w, h)},
                                      {"width", w},
                                      {"height", h},
                                      {"role", "img"},
                                      {"aria-label", "kernel events over time"}});
  out +=
      "\n" +
      svg::element("title", {},
                   fmt::format("kernel events {} to {}", format_iso8601(t0), format_iso8601(t1))) +
      "\n";
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    double y = top + row * (static_cast<double>(k) + 0.5);
    out += svg::element("text",
                        {{"x", left - 8},
                         {"y", num(y + 4)},
                         {"font-size", 11},
                         {"text-anchor", "end"},
                         {"fill", "#2d3748"}},
                        std::string(kmsg::event_kind_name(kinds[k]))) +
           "\n";
    out += svg::element("line", {{"x1", left},
                                 {"y1", num(y)},
                                 {"x2", num(w - right)},
                                 {"y2", num(y)},
                                 {"stroke", "#e2e8f0"}}) +
           "\n";
  }
  for (const auto* ev : timed) {
    auto k =
        static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), ev->kind) - kinds.begin());
    double y = top + row * (static_cast<double>(k) + 0.5);
    const std::string& line = ev->raw.empty() ? ev->message : ev->raw;
    out += svg::open("circle", {{"cx", num(xs.at(static_cast<double>(*ev->time_ns)))},
                                {"cy", num(y)},
                                {"r", 4},
                                {"fill", kind_colour(ev->kind)},
                                {"fill-opacity", "0.75"}});
    out += svg::element("title", {}, format_iso8601(*ev->time_ns) + " " + line);
    out += svg::close("circle") + "\n";
  }
  bool with_date = t1 - t0 > kDayNs;
  double base = h - 6;
  out += time_labels(left, w - right, base, t0, t1, with_date);
  if (left_out > 0) {
    out += svg::element("text",
                        {{"x", num((left + w - right) / 2)},
                         {"y", num(base)},
                         {"font-size", 11},
                         {"text-anchor", "middle"},
                         {"fill", "#4a5568"}},
                        fmt::format("{} later events not drawn", left_out)) +
           "\n";
  }
  return out + svg::close("svg") + "\n";
}

}  // namespace cardiac::doctor
