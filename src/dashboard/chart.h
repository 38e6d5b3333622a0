// SPDX-License-Identifier: Apache-2.0
// The dashboard's charts: which stored series a GPU's or the host's charts read, the step each
// range reads them at, and the series put on one time grid as JSON for uPlot.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::dashboard {

// A range the page offers and the step it is read at. Steps are chosen so that a range has a
// few hundred points at most, and so that the store answers from the level that fits
// (store::choose_resolution): 15m and 1h from raw samples, 24h from the minute roll-ups, 7d
// from the hour roll-ups.
struct ChartRange {
  std::string name;  // "15m", "1h", "24h", "7d"
  DurationNs span = 0;
  DurationNs step = 0;
};

// "15m", "1h", "24h" or "7d"; anything else is an invalid-argument error naming the choices.
[[nodiscard]] Result<ChartRange> parse_chart_range(std::string_view text);

// One point of a stored series, as store::history returns it.
struct SeriesPoint {
  TimeNs time = 0;  // start of its step, a multiple of the step
  double avg = 0;
  double min = 0;
  double max = 0;
};

// A stored series, or why it could not be read (then the chart says so).
struct Series {
  std::vector<SeriesPoint> points;
  std::string error;
};

// The store metrics the charts of a GPU (host = false) or of the host read.
[[nodiscard]] const std::vector<std::string>& chart_metrics(bool host);

struct ChartInput {
  std::optional<int> gpu;  // nullopt: the host
  ChartRange range;
  TimeNs until = 0;                       // now; the grid ends before it
  std::map<std::string, Series> series;   // by metric name, from chart_metrics()
  nlohmann::json now = nlohmann::json();  // the GPU's or host's latest status (limits, "now")
};

// The NVML clock-event bits that mean the GPU is held back (software power cap, hardware
// slowdown, software and hardware thermal slowdown, power brake); idle, application clocks,
// sync boost and display clock are not throttling.
inline constexpr std::uint64_t kThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

// The grid's first time: since = until - span rounded down to the step.
[[nodiscard]] TimeNs grid_start(TimeNs until, const ChartRange& range);

// cardiac.dashboard.chart/v1: "times" (unix seconds, one per step from grid_start() to before
// until), "panels" (each with "series" of values on that grid, null where no data, and
// "limits"), "throttle" (periods [from, to) in unix seconds), "errors" and "points" (how many
// non-null values in all).
[[nodiscard]] nlohmann::json chart(const ChartInput& in);

}  // namespace cardiac::dashboard
