// SPDX-License-Identifier: Apache-2.0
// Roll raw samples up into 1-minute and 1-hour buckets, and delete data past its retention.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/db.h"

namespace cardiac::store {

constexpr DurationNs kMinuteNs = 60 * kNsPerSec;
constexpr DurationNs kHourNs = 60 * kMinuteNs;
constexpr DurationNs kDayNs = 24 * kHourNs;

// Buckets this close behind the last roll-up are recomputed, so a batch flushed a little late
// still lands in its minute.
constexpr DurationNs kRollupLateness = 2 * kMinuteNs;

// `t` rounded down to a multiple of `bucket` (also for negative t).
constexpr TimeNs floor_to(TimeNs t, DurationNs bucket) {
  return t - (((t % bucket) + bucket) % bucket);
}

// One (metric, gpu) pair with rows in a table; gpu as stored (NULL in samples for the host,
// kHostGpu in rollups).
struct Series {
  std::int64_t metric_id = 0;
  std::optional<std::int64_t> gpu;
};

// Series present in `table` ("samples", "rollup_1m" or "rollup_1h"), found with index seeks
// rather than a table scan, so per-series work stays cheap on a week of raw data.
[[nodiscard]] Result<std::vector<Series>> list_series(const Db& db, std::string_view table);

// End (exclusive) of the data a level has rolled up: "1m" or "1h". nullopt before the first run.
[[nodiscard]] Result<std::optional<TimeNs>> rolled_up_until(const Db& db, std::string_view level);

struct RollupStats {
  std::int64_t minute_buckets = 0;  // rows written (replaced ones included)
  std::int64_t hour_buckets = 0;
};

// Computes 1-minute buckets (min/avg/max/count) from raw samples before the current minute,
// and 1-hour buckets from the 1-minute ones before the current hour. Work starts just behind
// the previous run (see kRollupLateness); buckets are INSERT OR REPLACEd, so running it again
// gives the same rollups. One transaction.
[[nodiscard]] Result<RollupStats> roll_up(Db& db, TimeNs now);
// The same with the hour level rolled up only to `hours_now` (at most `now`): the hour table is
// keyed by series, so each run that adds hour rows rewrites a page per series; the agent adds
// them once a day (see rollup_horizon()). Queries read the hours not rolled up yet from minutes.
[[nodiscard]] Result<RollupStats> roll_up(Db& db, TimeNs now, TimeNs hours_now);

// Where the agent's periodic roll-ups stop: minutes at the last whole hour that ended
// kRollupLateness ago, hours at the last whole (UTC) day. Minutes are stored a block per series
// and hour, so rolling up whole hours writes each block once, appended beside the other series'
// blocks of that hour; hour rows are keyed by series, so rolling them up a day at a time
// rewrites each series' page once a day rather than every hour. The range after each horizon
// is answered from the next finer level (history()).
struct RollupHorizon {
  TimeNs minutes = 0;
  TimeNs hours = 0;
};
constexpr RollupHorizon rollup_horizon(TimeNs now) {
  return {floor_to(now - kRollupLateness, kHourNs), floor_to(now - kRollupLateness, kDayNs)};
}

struct RetentionPolicy {
  DurationNs raw_keep = 7 * kDayNs;
  DurationNs minute_keep = 90 * kDayNs;
  DurationNs hour_keep = 730 * kDayNs;
};

struct PruneStats {
  std::int64_t raw = 0;
  std::int64_t minute = 0;
  std::int64_t hour = 0;
};

// Deletes rows older than now - keep at each level. Raw rows are deleted only once rolled up
// into minutes, and minute rows only once rolled up into hours, so pruning before any
// roll_up() loses nothing.
[[nodiscard]] Result<PruneStats> prune(Db& db, TimeNs now, const RetentionPolicy& policy = {});

}  // namespace cardiac::store
