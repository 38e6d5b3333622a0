// SPDX-License-Identifier: Apache-2.0
// The frame around every view (header, tabs, footer, help) and the GPU view.
#include "top/render.h"

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "core/units.h"
#include "top/glyphs.h"
#include "top/render_parts.h"

namespace cardiac::top {
namespace {

constexpr std::size_t kBarWidth = 4;
// The labels of the detail's lines ("  throttle ", "  util ").
constexpr std::size_t kLabelCells = 11;
constexpr double kGiB = 1024.0 * 1024 * 1024;

// Drop ranks: NAME goes first, then THROTTLE, the sparkline, REASON, POWER, MEM, TEMP, UTIL;
// GPU and VERDICT stay. At 80 columns NAME and THROTTLE are gone and REASON has 12.
constexpr ColumnSpec kGpuColumns[] = {
    {"GPU", 3, 0, false, Align::kRight},
    {"NAME", 14, 8},
    {"UTIL", kBarWidth + 5, 1},
    {"HISTORY", 10, 6},
    {"MEM", kBarWidth + 5, 3},
    {"TEMP/SLOW", kBarWidth + 8, 2},
    {"POWER/LIMIT", kBarWidth + 10, 4},
    {"THROTTLE", 10, 7},
    {"STAT", 4, 0},
    {"REASON", 12, 5, true},
};

bool is_metric_column(std::string_view name) {
  return name == "UTIL" || name == "HISTORY" || name == "MEM" || name == "TEMP/SLOW" ||
         name == "POWER/LIMIT" || name == "THROTTLE";
}

std::string percent(double v) {
  return fmt::format("{:.0f}%", v);
}

std::string temp_text(const GpuInfo& g) {
  if (!g.temp) return "n/a";
  return g.temp_slowdown ? fmt::format("{:.0f}/{:.0f}C", *g.temp, *g.temp_slowdown)
                         : fmt::format("{:.0f}C", *g.temp);
}

std::string power_text(const GpuInfo& g, std::size_t cells) {
  if (!g.power) return "n/a";
  std::string t = g.power_limit ? fmt::format("{:.0f}/{:.0f}W", *g.power, *g.power_limit)
                                : fmt::format("{:.0f}W", *g.power);
  if (display_width(t) > cells) t.pop_back();  // 4-digit watts: the unit gives way
  return t;
}

Style temp_style(const GpuInfo& g) {
  if (!g.temp || !g.temp_slowdown) return Style::kBar;
  if (*g.temp >= *g.temp_slowdown) return Style::kFail;
  return *g.temp + 5 >= *g.temp_slowdown ? Style::kWarn : Style::kOk;
}

// A bar and its value in `cells` columns: "███░ 97%".
void bar_cell(LineBuilder& b, std::optional<double> fraction, const std::string& value,
              Style bar_style, std::size_t cells, bool utf8, Style text_style) {
  if (fraction) {
    b.add(bar(*fraction, kBarWidth, utf8), bar_style);
  } else {
    b.add(std::string(kBarWidth, ' '), text_style);
  }
  b.cell(" " + fit(value, cells - kBarWidth - 1, utf8, Align::kRight), cells - kBarWidth,
         text_style);
}

std::string throttle_text(const GpuInfo& g) {
  if (!g.throttle) return "n/a";
  if (g.throttle->empty()) return g.idle ? "idle" : "none";
  std::string out;
  for (const auto& t : *g.throttle) out += (out.empty() ? "" : ",") + t;
  return out;
}

std::string first_problem(const GpuInfo& g) {
  for (const auto& r : g.reasons) {
    if (r.level != "OK") return r.text;
  }
  return "";
}

std::string health_text(const GpuInfo& g) {
  std::string h = g.health;
  std::replace(h.begin(), h.end(), '_', ' ');
  return g.health_detail.empty() ? h : h + ": " + g.health_detail;
}

void gpu_row(LineBuilder& b, const GpuInfo& g, const std::vector<Column>& cols, const History& hist,
             bool selected, bool utf8) {
  const Style base = selected ? Style::kSelected : Style::kNormal;
  auto styled = [&](Style s) { return selected ? Style::kSelected : s; };
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    if (i > 0) b.add(" ", base);
    if (g.health != "ok" && is_metric_column(c.name)) {
      // The readings of a GPU that did not answer are one cell saying why.
      std::size_t cells = c.width;
      while (i + 1 < cols.size() && is_metric_column(cols[i + 1].name)) {
        cells += kColumnGap + cols[++i].width;
      }
      b.cell(clean(health_text(g), utf8), cells, styled(Style::kFail));
      continue;
    }
    if (c.name == "GPU") {
      b.cell(std::to_string(g.index), c.width, base, Align::kRight);
    } else if (c.name == "NAME") {
      b.cell(clean(g.name, utf8), c.width, base);
    } else if (c.name == "UTIL") {
      bar_cell(b, g.util ? std::optional(*g.util / 100) : std::nullopt,
               g.util ? percent(*g.util) : "n/a", styled(Style::kBar), c.width, utf8, base);
    } else if (c.name == "HISTORY") {
      auto values = hist.values(g.index, Metric::kUtil);
      b.cell(sparkline(values, 100, c.width, utf8), c.width, styled(Style::kBar));
    } else if (c.name == "MEM") {
      std::optional<double> f;
      if (g.mem_used && g.mem_total && *g.mem_total > 0) f = *g.mem_used / *g.mem_total;
      bar_cell(b, f, f ? percent(*f * 100) : "n/a", styled(Style::kBar), c.width, utf8, base);
    } else if (c.name == "TEMP/SLOW") {
      std::optional<double> f;
      if (g.temp && g.temp_slowdown && *g.temp_slowdown > 0) f = *g.temp / *g.temp_slowdown;
      bar_cell(b, f, temp_text(g), styled(temp_style(g)), c.width, utf8, base);
    } else if (c.name == "POWER/LIMIT") {
      std::optional<double> f;
      if (g.power && g.power_limit && *g.power_limit > 0) f = *g.power / *g.power_limit;
      bar_cell(b, f, power_text(g, c.width - kBarWidth - 1), styled(Style::kBar), c.width, utf8,
               base);
    } else if (c.name == "THROTTLE") {
      const std::string t = throttle_text(g);
      const bool slowed = t != "none" && t != "idle" && t != "n/a" && t != "sw_power";
      b.cell(t, c.width, styled(slowed ? Style::kWarn : Style::kNormal));
    } else if (c.name == "STAT") {
      b.cell(g.verdict.empty() ? "?" : g.verdict, c.width, styled(verdict_style(g.verdict)));
    } else if (c.name == "REASON") {
      b.cell(clean(first_problem(g), utf8), c.width, base);
    }
  }
}

// One sparkline line of the detail: "  util  ▂▃▅▇█ 97%".
Line spark_line(const char* label, const std::vector<std::optional<double>>& values, double max,
                Style style, const std::string& value, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  b.cell(std::string("  ") + label, kLabelCells);
  constexpr std::size_t kValueCells = 22;
  const std::size_t spark =
      o.width > kLabelCells + 1 + kValueCells ? o.width - kLabelCells - 1 - kValueCells : 0;
  if (spark >= 4) {
    b.add(sparkline(values, max, spark, o.utf8), style);
    b.add(" ");
  }
  b.add(value);
  return b.done();
}

double series_max(const std::vector<std::optional<double>>& values) {
  double m = 0;
  for (const auto& v : values) {
    if (v) m = std::max(m, *v);
  }
  return m;
}

std::vector<Line> gpu_detail(const GpuInfo& g, const History& hist, const RenderOptions& o) {
  std::vector<Line> out;
  {
    LineBuilder b(o.width, o.utf8);
    const char* dot = o.utf8 ? " · " : " - ";
    std::string title = fmt::format("GPU {}", g.index);
    if (!g.name.empty()) title += dot + clean(g.name, o.utf8);
    if (!g.bus_id.empty()) title += dot + clean(g.bus_id, o.utf8);
    b.add(title, Style::kTitle);
    b.add("  ");
    b.add(g.verdict.empty() ? "?" : g.verdict, verdict_style(g.verdict));
    out.push_back(b.done());
  }
  for (const auto& r : g.reasons) {
    if (r.level == "OK") continue;
    LineBuilder b(o.width, o.utf8);
    b.add("  ");
    b.add(r.level, verdict_style(r.level));
    b.add(" " + clean(r.text, o.utf8));
    out.push_back(b.done());
  }
  if (g.health != "ok" && !g.health_detail.empty()) {
    LineBuilder b(o.width, o.utf8);
    b.add("  " + clean(g.health_detail, o.utf8), Style::kDim);
    out.push_back(b.done());
  }
  {
    LineBuilder b(o.width, o.utf8);
    b.cell("  throttle", kLabelCells);
    b.add(throttle_text(g));
    out.push_back(b.done());
  }
  const auto util = hist.values(g.index, Metric::kUtil);
  out.push_back(spark_line("util", util, 100, Style::kBar, g.util ? percent(*g.util) : "n/a", o));
  const auto mem = hist.values(g.index, Metric::kMem);
  out.push_back(
      spark_line("mem", mem, g.mem_total.value_or(series_max(mem)), Style::kBar,
                 g.mem_used && g.mem_total
                     ? fmt::format("{:.1f}/{:.1f} GiB", *g.mem_used / kGiB, *g.mem_total / kGiB)
                     : "n/a",
                 o));
  const auto temp = hist.values(g.index, Metric::kTemp);
  std::string tv = g.temp ? fmt::format("{:.0f} C", *g.temp) : "n/a";
  if (g.temp && g.temp_slowdown) tv += fmt::format(", slowdown {:.0f} C", *g.temp_slowdown);
  out.push_back(
      spark_line("temp", temp, g.temp_slowdown.value_or(series_max(temp)), temp_style(g), tv, o));
  const auto power = hist.values(g.index, Metric::kPower);
  std::string pv = g.power ? fmt::format("{:.0f} W", *g.power) : "n/a";
  if (g.power && g.power_limit) pv = fmt::format("{:.0f}/{:.0f} W", *g.power, *g.power_limit);
  out.push_back(
      spark_line("power", power, g.power_limit.value_or(series_max(power)), Style::kBar, pv, o));
  for (const auto& p : g.processes) {
    LineBuilder b(o.width, o.utf8);
    std::string text = fmt::format("  pid {}  {}", p.pid, p.name.empty() ? "(unknown)" : p.name);
    if (!p.user.empty()) text += "  user " + p.user;
    if (!p.job.empty()) text += "  job " + p.job;
    text += "  " + (p.memory ? format_bytes(*p.memory) : std::string("n/a"));
    b.add(clean(text, o.utf8));
    out.push_back(b.done());
  }
  return out;
}

}  // namespace

std::span<const ColumnSpec> gpu_columns() {
  return kGpuColumns;
}

std::string Line::text() const {
  std::string out;
  for (const auto& s : spans) out += s.text;
  return out;
}

std::string Frame::text() const {
  std::string out;
  for (const auto& l : lines) out += l.text() + "\n";
  return out;
}

void LineBuilder::add(std::string_view text, Style style) {
  if (used_ >= width_ || text.empty()) return;
  const std::size_t w = display_width(text);
  if (used_ + w <= width_) {
    line_.spans.push_back({std::string(text), style});
    used_ += w;
    return;
  }
  line_.spans.push_back({fit(text, width_ - used_, utf8_), style});
  used_ = width_;
}

void LineBuilder::cell(std::string_view text, std::size_t cells, Style style, Align align) {
  add(fit(text, cells, utf8_, align), style);
}

Line LineBuilder::done(Style fill) {
  if (used_ < width_) line_.spans.push_back({std::string(width_ - used_, ' '), fill});
  used_ = width_;
  return std::move(line_);
}

std::string short_duration(DurationNs d) {
  const std::int64_t s = d > 0 ? d / kNsPerSec : 0;
  if (s >= 86400) return fmt::format("{}d {:02}h", s / 86400, (s % 86400) / 3600);
  if (s >= 3600) return fmt::format("{}h {:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Style verdict_style(std::string_view v) {
  return v == "FAIL"   ? Style::kFail
         : v == "WARN" ? Style::kWarn
         : v == "OK"   ? Style::kOk
                       : Style::kNormal;
}

Line header_line(const std::vector<Column>& cols, const RenderOptions& o) {
  LineBuilder b(o.width, o.utf8);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (i > 0) b.add(" ", Style::kHeader);
    b.cell(cols[i].name, cols[i].width, Style::kHeader, cols[i].align);
  }
  return b.done(Style::kHeader);
}

Line message_line(std::string_view text, const RenderOptions& o, Style style) {
  LineBuilder b(o.width, o.utf8);
  b.add("  ");
  b.add(clean(text, o.utf8), style);
  return b.done();
}

std::vector<Line> help_lines(const std::vector<std::string>& text, const RenderOptions& o) {
  std::vector<Line> out;
  for (const auto& t : text) {
    LineBuilder b(o.width, o.utf8);
    b.add(t, t == "Keys" ? Style::kTitle : Style::kNormal);
    out.push_back(b.done());
  }
  return out;
}

std::size_t scroll_offset(std::size_t selected, std::size_t visible) {
  return visible == 0 || selected < visible ? 0 : selected - visible + 1;
}

std::vector<Line> gpu_view(const Snapshot& s, const History& h, const ViewState& v,
                           const RenderOptions& o, std::size_t rows) {
  std::vector<Line> out;
  const auto cols = fit_columns(gpu_columns(), o.width);
  out.push_back(header_line(cols, o));
  if (rows > 0) --rows;
  const auto list = gpu_rows(s, v);
  if (list.empty()) {
    if (!v.filter.empty()) {
      out.push_back(message_line("no GPU matches the filter '" + v.filter + "' (Esc clears it)", o,
                                 Style::kDim));
    } else {
      out.push_back(message_line(s.message.empty() ? "no GPUs" : s.message, o, Style::kWarn));
    }
    return out;
  }
  // The table, and below it the selected GPU's detail when at least 6 lines are left for it.
  constexpr std::size_t kDetailMin = 6;
  std::size_t table = std::min(list.size(), rows);
  if (rows < list.size() + 1 + kDetailMin && rows >= 2 * kDetailMin) {
    table = rows - kDetailMin - 1;  // many GPUs: the table scrolls, the detail keeps its lines
  }
  const std::size_t sel = v.selected[static_cast<std::size_t>(View::kGpus)];
  const std::size_t first = scroll_offset(sel, table);
  for (std::size_t i = first; i < list.size() && i < first + table; ++i) {
    LineBuilder b(o.width, o.utf8);
    gpu_row(b, *list[i], cols, h, i == sel, o.utf8);
    out.push_back(b.done(i == sel ? Style::kSelected : Style::kNormal));
  }
  if (rows > table + 1 && sel < list.size()) {
    out.push_back(LineBuilder(o.width, o.utf8).done());
    for (auto& l : gpu_detail(*list[sel], h, o)) {
      if (out.size() >= rows + 1) break;
      out.push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace cardiac::top
