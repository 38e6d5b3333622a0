// SPDX-License-Identifier: Apache-2.0
#include "dashboard/chart.h"

#include <array>
#include <cmath>
#include <cstdint>

#include "core/time.h"

namespace cardiac::dashboard {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// One line on a panel: a stored metric, scaled into the panel's unit.
struct Line {
  const char* metric;
  const char* label;
  double scale;
};

// A horizontal line drawn at the latest value of a status field (the slowdown temperature, the
// total memory): what a reading is measured against.
struct Limit {
  const char* field;  // in the GPU's or host's status object ("memory.total_bytes": nested)
  const char* label;
  double scale;
};

struct Panel {
  const char* id;
  const char* title;
  const char* unit;
  std::vector<Line> lines;
  std::vector<Limit> limits;
};

const std::vector<Panel>& gpu_panels() {
  static const std::vector<Panel> kPanels = {
      {"utilization",
       "Utilization",
       "%",
       {{"gpu_utilization_gpu", "GPU", 1}, {"gpu_utilization_memory", "memory bus", 1}},
       {}},
      {"memory",
       "Memory",
       "GiB",
       {{"gpu_memory_used", "used", 1 / kGiB}},
       {{"memory_total", "total", 1 / kGiB}}},
      {"temperature",
       "Temperature",
       "°C",
       {{"gpu_temperature", "GPU", 1}},
       {{"temperature_slowdown", "slowdown", 1}}},
      {"power",
       "Power",
       "W",
       {{"gpu_power_usage_mw", "draw", 1e-3}, {"gpu_power_limit_mw", "limit", 1e-3}},
       {}},
      {"clocks",
       "Clocks",
       "MHz",
       {{"gpu_clock_sm_mhz", "SM", 1}, {"gpu_clock_mem_mhz", "memory", 1}},
       {{"clock_sm_max_mhz", "SM max", 1}}},
  };
  return kPanels;
}

const std::vector<Panel>& host_panels() {
  static const std::vector<Panel> kPanels = {
      {"cpu",
       "CPU",
       "%",
       {{"host_cpu_busy_percent", "busy", 1}, {"host_cpu_iowait_percent", "iowait", 1}},
       {}},
      {"memory",
       "Memory",
       "GiB",
       {{"host_memory_available_bytes", "available", 1 / kGiB},
        {"host_swap_used_bytes", "swap used", 1 / kGiB}},
       {{"memory.total_bytes", "total", 1 / kGiB}}},
      {"load", "Load", "", {{"host_load1", "load 1 min", 1}}, {{"cpu.cores", "cores", 1}}},
  };
  return kPanels;
}

constexpr const char* kThrottleMetric = "gpu_clock_event_reasons";

// A field of `obj`, "a.b" for a nested one; null when absent or not a number.
json field(const json& obj, std::string_view path) {
  const json* cur = &obj;
  while (true) {
    if (!cur->is_object()) return nullptr;
    auto dot = path.find('.');
    auto it = cur->find(std::string(path.substr(0, dot)));
    if (it == cur->end()) return nullptr;
    if (dot == std::string_view::npos) return it->is_number() ? *it : json();
    cur = &*it;
    path = path.substr(dot + 1);
  }
}

// Grid times are whole multiples of a step of whole seconds.
std::int64_t seconds(TimeNs t) {
  return t / kNsPerSec;
}

}  // namespace

Result<ChartRange> parse_chart_range(std::string_view text) {
  constexpr DurationNs kMin = 60 * kNsPerSec;
  constexpr DurationNs kHour = 60 * kMin;
  if (text == "15m") return ChartRange{"15m", 15 * kMin, 5 * kNsPerSec};
  if (text == "1h") return ChartRange{"1h", kHour, 15 * kNsPerSec};
  if (text == "24h") return ChartRange{"24h", 24 * kHour, 5 * kMin};
  if (text == "7d") return ChartRange{"7d", 7 * 24 * kHour, kHour};
  return fail(Error::invalid("range must be 15m, 1h, 24h or 7d, got '" + std::string(text) + "'"));
}

const std::vector<std::string>& chart_metrics(bool host) {
  static const auto kLists = [] {
    std::array<std::vector<std::string>, 2> lists;
    for (const auto& p : gpu_panels()) {
      for (const auto& l : p.lines) lists[0].emplace_back(l.metric);
    }
    lists[0].emplace_back(kThrottleMetric);
    for (const auto& p : host_panels()) {
      for (const auto& l : p.lines) lists[1].emplace_back(l.metric);
    }
    return lists;
  }();
  return kLists[host ? 1 : 0];
}

TimeNs grid_start(TimeNs until, const ChartRange& range) {
  TimeNs since = until - range.span;
  TimeNs rem = since % range.step;
  if (rem < 0) rem += range.step;
  return since - rem;
}

json chart(const ChartInput& in) {
  const ChartRange& r = in.range;
  const TimeNs first = grid_start(in.until, r);
  const std::size_t n =
      in.until > first ? static_cast<std::size_t>((in.until - first + r.step - 1) / r.step) : 0;
  json times = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    times.push_back(seconds(first + static_cast<TimeNs>(i) * r.step));
  }
  // The grid slot of a point, or nothing for one outside the grid or off its steps.
  auto slot = [&](TimeNs t) -> std::optional<std::size_t> {
    if (t < first || t >= in.until || (t - first) % r.step != 0) return std::nullopt;
    return static_cast<std::size_t>((t - first) / r.step);
  };

  json errors = json::array();
  std::int64_t points = 0;
  json panels = json::array();
  for (const auto& p : in.gpu ? gpu_panels() : host_panels()) {
    json series = json::array();
    for (const auto& line : p.lines) {
      json values = json::array();
      for (std::size_t i = 0; i < n; ++i) values.push_back(nullptr);
      auto it = in.series.find(line.metric);
      if (it == in.series.end()) {
        errors.push_back({{"metric", line.metric}, {"error", "not read"}});
      } else if (!it->second.error.empty()) {
        errors.push_back({{"metric", line.metric}, {"error", it->second.error}});
      } else {
        for (const auto& pt : it->second.points) {
          if (auto i = slot(pt.time); i && std::isfinite(pt.avg)) {
            values[*i] = pt.avg * line.scale;
            ++points;
          }
        }
      }
      series.push_back({{"label", line.label}, {"metric", line.metric}, {"values", values}});
    }
    json limits = json::array();
    for (const auto& l : p.limits) {
      json v = field(in.now, l.field);
      if (!v.is_null())
        limits.push_back({{"label", l.label}, {"value", v.get<double>() * l.scale}});
    }
    panels.push_back({{"id", p.id},
                      {"title", p.title},
                      {"unit", p.unit},
                      {"series", std::move(series)},
                      {"limits", std::move(limits)}});
  }

  // Throttle periods: runs of steps in which some sample had a throttling bit. A roll-up keeps
  // the bucket's max, so a step counts when its max has one of kThrottleMask's bits (a bucket
  // whose max is a harmless reason above a throttling one is missed; rare, and the alert rules
  // see every sample).
  json throttle = json::array();
  if (in.gpu) {
    if (auto it = in.series.find(kThrottleMetric); it != in.series.end()) {
      bool open = false;
      TimeNs from = 0;
      TimeNs last_end = 0;
      for (const auto& pt : it->second.points) {
        if (!slot(pt.time)) continue;
        bool held = (static_cast<std::uint64_t>(std::llround(pt.max)) & kThrottleMask) != 0;
        if (open && (!held || pt.time != last_end)) {  // the run ended, or a gap broke it
          throttle.push_back({{"from", seconds(from)}, {"to", seconds(last_end)}});
          open = false;
        }
        if (held && !open) {
          open = true;
          from = pt.time;
        }
        if (held) last_end = pt.time + r.step;
      }
      if (open) throttle.push_back({{"from", seconds(from)}, {"to", seconds(last_end)}});
    }
  }

  json out{{"schema", "cardiac.dashboard.chart/v1"},
           {"target", in.gpu ? "gpu " + std::to_string(*in.gpu) : std::string("host")},
           {"range", r.name},
           {"step_s", r.step / kNsPerSec},
           {"since", format_iso8601(first)},
           {"until", format_iso8601(in.until)},
           {"times", std::move(times)},
           {"panels", std::move(panels)},
           {"throttle", std::move(throttle)},
           {"errors", std::move(errors)},
           {"points", points}};
  if (in.gpu) out["gpu"] = *in.gpu;
  return out;
}

}  // namespace cardiac::dashboard
