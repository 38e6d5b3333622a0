// SPDX-License-Identifier: Apache-2.0
// Reading a metric's history at the resolution that fits the requested step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/db.h"
#include "store/sealed.h"

namespace cardiac::store {

enum class Resolution { kRaw, kMinute, kHour };
std::string_view resolution_name(Resolution r);

// The rule: the coarsest level whose bucket fits in one step — step >= 1 h reads rollup_1h,
// step >= 1 min reads rollup_1m, anything finer reads raw samples. Each output point then
// aggregates whole buckets, and a long range never scans raw rows. The span is the caller's
// business: asking a week at 1 s steps reads a week of raw rows (the dashboard picks
// step = span / points).
[[nodiscard]] Resolution choose_resolution(DurationNs step);

struct HistoryQuery {
  std::string metric;           // "gpu_temperature"
  std::optional<unsigned> gpu;  // nullopt = the host series
  TimeNs since = 0;             // inclusive
  TimeNs until = 0;             // exclusive
  DurationNs step = kNsPerSec;  // > 0; points are aligned to multiples of step since the epoch
};

struct HistoryPoint {
  TimeNs time = 0;  // start of the step
  double avg = 0;
  double min = 0;
  double max = 0;
  std::int64_t count = 0;  // raw samples behind the point
};

struct History {
  Resolution resolution = Resolution::kRaw;
  std::vector<HistoryPoint> points;  // ascending time, steps without data omitted
};

// Refuses a query that can only give an empty answer by mistake, with an invalid-argument error
// that says why: a metric the agent never stores (not among stored_metrics() nor in the store),
// a GPU metric without a GPU, a host metric with one, until before since, a step <= 0.
[[nodiscard]] Status check_history_query(const Db& db, const HistoryQuery& q);

// Whether the store holds any value of `metric` for GPU `gpu`, raw or rolled up, at any time:
// tells a GPU index the store never saw from a range that merely has no data.
[[nodiscard]] Result<bool> has_gpu_series(const Db& db, const std::string& metric, unsigned gpu);

// The series of `q.metric` for `q.gpu` in [since, until), one point per step with data.
// A rollup bucket counts when its start lies in the range. The part of the range that the
// chosen level has not rolled up yet (the current minute or hour) is filled from the next finer
// level, so recent data is never missing. An unknown metric gives an empty series. `tail`: the
// raw tail decoded once across the reads of one request (read_series).
[[nodiscard]] Result<History> history(const Db& db, const HistoryQuery& q,
                                      TailCache* tail = nullptr);

}  // namespace cardiac::store
