// SPDX-License-Identifier: Apache-2.0
// Inline SVG charts for the HTML report, and HTML escaping.
#include "doctor/render/charts.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/format.h"
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

struct Scale {
  double lo, hi;
  double px_lo, px_hi;  // pixel positions of lo and hi
  [[nodiscard]] double at(double v) const {
    return hi == lo ? (px_lo + px_hi) / 2 : px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo);
  }
};

std::string px(double v) {
  return fmt::format("{:.1f}", v);
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

  std::string svg = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"{2}\">\n<title>{2}{3}: {4} to {5}</title>\n",
      w, h, html_escape(name), html_escape(unit), format_iso8601(t0), format_iso8601(t1));
  svg += fmt::format(
      "<text x=\"{}\" y=\"14\" font-size=\"12\" font-weight=\"bold\" "
      "fill=\"#2d3748\">{}{}</text>\n",
      left, html_escape(name), e.unit.empty() ? "" : " (" + html_escape(e.unit) + ")");
  svg += fmt::format(
      "<text x=\"{}\" y=\"14\" font-size=\"11\" text-anchor=\"end\" fill=\"#4a5568\">min {} · max "
      "{}{}</text>\n",
      px(w - right), detail::format_number(data_lo), detail::format_number(data_hi),
      html_escape(unit));
  // Axes, then their labels: value range on the left, time range below.
  svg += fmt::format(
      "<path d=\"M{0} {1}V{2}H{3}\" fill=\"none\" stroke=\"#a0aec0\" stroke-width=\"1\"/>\n", left,
      top, px(h - bottom), px(w - right));
  for (double v : {lo, hi}) {
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" "
        "fill=\"#4a5568\">{}{}</text>\n",
        left - 6, px(ys.at(v) + 4), detail::format_number(v), html_escape(unit));
  }
  bool with_date = t1 - t0 > kDayNs;
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#4a5568\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" fill=\"#4a5568\">{}</text>\n",
      left, px(h - 6), time_label(t0, with_date), px(w - right), px(h - 6),
      time_label(t1, with_date));
  if (e.threshold && std::isfinite(*e.threshold)) {
    double y = ys.at(*e.threshold);
    svg += fmt::format(
        "<line class=\"threshold\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#c53030\" "
        "stroke-width=\"1\" stroke-dasharray=\"5 4\"/>\n"
        "<text x=\"{2}\" y=\"{3}\" font-size=\"10\" text-anchor=\"end\" fill=\"#c53030\">"
        "threshold {4}{5}</text>\n",
        left, px(y), px(w - right), px(y - 3), detail::format_number(*e.threshold),
        html_escape(unit));
  }
  if (pts.size() == 1) {
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"#2b6cb0\"/>\n",
                       px(xs.at(static_cast<double>(t0))), px(ys.at(pts[0].second)));
  } else {
    std::string points;
    for (const auto& [t, v] : pts) {
      if (!points.empty()) points += ' ';
      points += px(xs.at(static_cast<double>(t))) + "," + px(ys.at(v));
    }
    svg += fmt::format(
        "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"#2b6cb0\" "
        "stroke-width=\"1.5\" stroke-linejoin=\"round\"/>\n",
        points);
  }
  svg += "</svg>\n";
  return svg;
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

  std::string svg = fmt::format(
      "<svg class=\"timeline\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"kernel events over time\">\n<title>kernel events {2} to {3}</title>\n",
      w, h, format_iso8601(t0), format_iso8601(t1));
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    double y = top + row * (static_cast<double>(k) + 0.5);
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" fill=\"#2d3748\">{}</text>\n"
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e2e8f0\"/>\n",
        left - 8, px(y + 4), html_escape(std::string(kmsg::event_kind_name(kinds[k]))), left, px(y),
        px(w - right), px(y));
  }
  for (const auto* ev : timed) {
    auto k =
        static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), ev->kind) - kinds.begin());
    double y = top + row * (static_cast<double>(k) + 0.5);
    const std::string& line = ev->raw.empty() ? ev->message : ev->raw;
    svg += fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.75\"><title>{} {}</title>"
        "</circle>\n",
        px(xs.at(static_cast<double>(*ev->time_ns))), px(y), kind_colour(ev->kind),
        format_iso8601(*ev->time_ns), html_escape(line));
  }
  bool with_date = t1 - t0 > kDayNs;
  double base = h - 6;
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#4a5568\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" fill=\"#4a5568\">{}</text>\n",
      left, px(base), time_label(t0, with_date), px(w - right), px(base),
      time_label(t1, with_date));
  if (left_out > 0) {
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#4a5568\">{} later "
        "events not drawn</text>\n",
        px((left + w - right) / 2), px(base), left_out);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace cardiac::doctor
