// SPDX-License-Identifier: Apache-2.0
// Roll-ups and pruning, done per series so every statement is an index range.
#include "store/retention.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "core/format.h"
#include "store/minute_blocks.h"
#include "store/schema.h"
#include "store/sealed.h"

namespace cardiac::store {
namespace {

constexpr TimeNs kBeginning = std::numeric_limits<TimeNs>::min();

Status set_rolled_up_until(Db& db, std::string_view level, TimeNs t) {
  auto st = db.prepare(
      "INSERT INTO rollup_state(level, done_until_ns) VALUES (?1, ?2) "
      "ON CONFLICT(level) DO UPDATE SET done_until_ns = excluded.done_until_ns "
      "WHERE excluded.done_until_ns > done_until_ns");
  if (!st) return fail(std::move(st).error());
  return st->bind_all(level, t).run();
}

// Where a level's next run starts: a little before the previous end, on a bucket boundary.
Result<TimeNs> start_of(const Db& db, std::string_view level, DurationNs bucket) {
  auto done = rolled_up_until(db, level);
  if (!done) return fail(std::move(done).error());
  if (!*done) return kBeginning;
  return floor_to(**done - kRollupLateness, bucket);
}

// 1-minute buckets of every series' raw samples in [start, end), whichever of chunks, tail and
// legacy rows hold them, merged into each series' block of the hour. One series is decoded at a
// time: holding an hour of every series (about 20 MB for 8 GPUs) raised the agent's memory by
// that much once an hour. min/avg/max/count as SQL's aggregates over the samples in time order
// gave them.
Result<std::int64_t> roll_minute_slice(Db& db, TimeNs start, TimeNs end) {
  std::int64_t written = 0;
  std::vector<MinuteBucket> fresh;
  const auto roll = [&](const SeriesKey& key, const std::vector<Point>& points) -> Status {
    fresh.clear();
    std::size_t i = 0;
    while (i < points.size()) {
      const TimeNs bucket = points[i].time - (points[i].time % kMinuteNs);
      double lo = points[i].value;
      double hi = points[i].value;
      double sum = 0;
      std::int64_t n = 0;
      for (; i < points.size() && points[i].time - (points[i].time % kMinuteNs) == bucket; ++i) {
        lo = std::min(lo, points[i].value);
        hi = std::max(hi, points[i].value);
        sum += points[i].value;
        ++n;
      }
      if (!fresh.empty() && block_hour(fresh.back().bucket) != block_hour(bucket)) {
        CARDIAC_TRY(merge_minute_block(db, key, block_hour(fresh.back().bucket), fresh));
        fresh.clear();
      }
      fresh.push_back({bucket, lo, sum / static_cast<double>(n), hi, n});
      ++written;
    }
    if (!fresh.empty()) {
      CARDIAC_TRY(merge_minute_block(db, key, block_hour(fresh.back().bucket), fresh));
    }
    return {};
  };
  CARDIAC_TRY(for_each_series(db, start, end, roll));
  return written;
}

// The series with minute buckets in [start, end): rows of the older table, blocks.
Result<std::vector<SeriesKey>> minute_series(const Db& db, TimeNs start, TimeNs end) {
  std::vector<SeriesKey> out;
  auto legacy = list_series(db, "rollup_1m");
  if (!legacy) return fail(std::move(legacy).error());
  for (const auto& s : *legacy) out.push_back({s.metric_id, s.gpu.value_or(kHostGpu)});
  auto st = db.prepare(
      "SELECT DISTINCT metric_id, gpu FROM rollup_1m_blocks WHERE hour_ns >= ?1 AND hour_ns < ?2");
  if (!st) return fail(std::move(st).error());
  // A block starts up to an hour before its first bucket only for negative times.
  st->bind_all(start == kBeginning ? start : block_hour(start) - kHourNs, end);
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    out.push_back({st->column_int64(0), st->column_int64(1)});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// 1-hour buckets of the minute buckets in [start, end), as the SQL over `rollup_1m` computed
// them: min(min), sum(avg * count) / sum(count) summed in minute order, max(max), sum(count).
// An hour row is written only when it changes.
Result<std::int64_t> roll_hours(Db& db, TimeNs start, TimeNs end) {
  std::int64_t written = 0;
  if (start >= end) return written;
  auto series = minute_series(db, start, end);
  if (!series) return fail(std::move(series).error());
  auto old = db.prepare(
      "SELECT min, avg, max, count FROM rollup_1h WHERE metric_id = ?1 AND gpu = ?2 AND "
      "bucket_ns = ?3");
  if (!old) return fail(std::move(old).error());
  auto ins = db.prepare(
      "INSERT OR REPLACE INTO rollup_1h(bucket_ns, gpu, metric_id, min, avg, max, count) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!ins) return fail(std::move(ins).error());
  const auto same = [](double a, double b) {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  };
  for (const SeriesKey& key : *series) {
    auto buckets = read_minute_buckets(db, key, start, end);
    if (!buckets) return fail(std::move(buckets).error());
    std::size_t i = 0;
    while (i < buckets->size()) {
      const TimeNs hour = block_hour((*buckets)[i].bucket);
      double lo = (*buckets)[i].min;
      double hi = (*buckets)[i].max;
      double sum = 0;
      std::int64_t n = 0;
      for (; i < buckets->size() && block_hour((*buckets)[i].bucket) == hour; ++i) {
        const MinuteBucket& b = (*buckets)[i];
        lo = std::min(lo, b.min);
        hi = std::max(hi, b.max);
        sum += b.avg * static_cast<double>(b.count);
        n += b.count;
      }
      const double avg = sum / static_cast<double>(n);
      ++written;
      old->bind_all(key.metric_id, key.gpu, hour);
      auto row = old->step();
      if (!row) return fail(std::move(row).error());
      const bool unchanged = *row && same(old->column_double(0), lo) &&
                             same(old->column_double(1), avg) && same(old->column_double(2), hi) &&
                             old->column_int64(3) == n;
      old->reset();
      if (unchanged) continue;
      ins->bind_all(hour, key.gpu, key.metric_id, lo, avg, hi, n);
      CARDIAC_TRY(ins->run());
      ins->reset();
    }
  }
  return written;
}

// The earliest raw sample, for a first roll-up (nullopt: none). Older `samples` rows have no
// index on time alone: a store that never rolled up is new, so that scan is short.
Result<std::optional<TimeNs>> earliest_raw(const Db& db) {
  auto t = db.query_int64(
      "SELECT min(t) FROM (SELECT min(time_ns) AS t FROM samples UNION ALL "
      "SELECT min(start_ns) FROM sample_seals UNION ALL SELECT min(start_ns) FROM sample_tail)");
  if (!t) return fail(std::move(t).error());
  auto log = live_tail_records(db);
  if (!log) return fail(std::move(log).error());
  std::optional<TimeNs> first = *t;
  for (const TailRecord& r : log->records) {
    if (r.count > 0 && (!first || r.start_ns < *first)) first = r.start_ns;
  }
  return first;
}

// A long window (the first run, or one after the maintenance thread was stopped for days) goes
// an hour at a time: a series' decoded samples are held while its buckets are computed.
Result<std::int64_t> roll_minutes(Db& db, TimeNs start, TimeNs end) {
  std::int64_t written = 0;
  if (start == kBeginning) {
    auto first = earliest_raw(db);
    if (!first) return fail(std::move(first).error());
    if (!*first) return written;
    start = floor_to(**first, kMinuteNs);
  }
  while (start < end) {
    // Whole hours, so each run merges into a series' block once per hour.
    const TimeNs slice_end = std::min(end, floor_to(start, kHourNs) + kHourNs);
    auto n = roll_minute_slice(db, start, slice_end);
    if (!n) return fail(std::move(n).error());
    written += *n;
    start = slice_end;
  }
  return written;
}

Result<std::int64_t> prune_table(Db& db, std::string_view table, std::string_view time_col,
                                 TimeNs before) {
  std::int64_t deleted = 0;
  if (before == kBeginning) return deleted;
  auto series = list_series(db, table);
  if (!series) return fail(std::move(series).error());
  auto st = db.prepare(fmt::format("DELETE FROM {} WHERE metric_id = ?1 AND gpu IS ?2 AND {} < ?3",
                                   table, time_col));
  if (!st) return fail(std::move(st).error());
  for (const auto& s : *series) {
    CARDIAC_TRY(st->bind_all(s.metric_id, s.gpu, before).run());
    deleted += db.changes();
    st->reset();
  }
  return deleted;
}

}  // namespace

Result<std::vector<Series>> list_series(const Db& db, std::string_view table) {
  auto metrics = db.prepare("SELECT id FROM metrics ORDER BY id");
  if (!metrics) return fail(std::move(metrics).error());
  auto host = db.prepare(
      fmt::format("SELECT 1 FROM {} WHERE metric_id = ? AND gpu IS NULL LIMIT 1", table));
  if (!host) return fail(std::move(host).error());
  // A skip scan by hand: each query jumps to the next GPU number of the metric in the index.
  auto next = db.prepare(fmt::format(
      "SELECT gpu FROM {} WHERE metric_id = ? AND gpu > ? ORDER BY gpu LIMIT 1", table));
  if (!next) return fail(std::move(next).error());

  std::vector<Series> out;
  for (;;) {
    auto row = metrics->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    const std::int64_t id = metrics->column_int64(0);
    host->bind_all(id);
    auto has_host = host->step();
    if (!has_host) return fail(std::move(has_host).error());
    if (*has_host) out.push_back(Series{id, std::nullopt});
    host->reset();
    std::int64_t after = std::numeric_limits<std::int64_t>::min();
    for (;;) {
      next->bind_all(id, after);
      auto got = next->step();
      if (!got) return fail(std::move(got).error());
      if (!*got) {
        next->reset();
        break;
      }
      after = next->column_int64(0);
      next->reset();
      out.push_back(Series{id, after});
    }
  }
  return out;
}

Result<std::optional<TimeNs>> rolled_up_until(const Db& db, std::string_view level) {
  auto st = db.prepare("SELECT done_until_ns FROM rollup_state WHERE level = ?");
  if (!st) return fail(std::move(st).error());
  st->bind_all(level);
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  if (!*row) return std::optional<TimeNs>{};
  return std::optional<TimeNs>(st->column_int64(0));
}

Result<RollupStats> roll_up(Db& db, TimeNs now) {
  return roll_up(db, now, now);
}

Result<RollupStats> roll_up(Db& db, TimeNs now, TimeNs hours_now) {
  auto tx = Transaction::begin(db);
  if (!tx) return fail(std::move(tx).error());
  RollupStats stats;

  const TimeNs minute_end = floor_to(now, kMinuteNs);
  auto minute_start = start_of(db, "1m", kMinuteNs);
  if (!minute_start) return fail(std::move(minute_start).error());
  auto minutes = roll_minutes(db, *minute_start, minute_end);
  if (!minutes) return fail(std::move(minutes).error());
  stats.minute_buckets = *minutes;
  CARDIAC_TRY(set_rolled_up_until(db, "1m", minute_end));

  // An hour is complete once the minute level has passed its end, which minute_end >= hour_end
  // guarantees. Of the hours rolled up before, only those whose minutes this run may have
  // rewritten are computed again: the others would come out the same.
  const TimeNs hour_end = floor_to(std::min(now, hours_now), kHourNs);
  auto hour_start = start_of(db, "1h", kHourNs);
  if (!hour_start) return fail(std::move(hour_start).error());
  if (*minute_start != kBeginning && *hour_start != kBeginning) {
    auto hour_done = rolled_up_until(db, "1h");
    if (!hour_done) return fail(std::move(hour_done).error());
    *hour_start =
        std::max(*hour_start, std::min(floor_to(*minute_start, kHourNs), hour_done->value_or(0)));
  }
  auto hours = roll_hours(db, *hour_start, hour_end);
  if (!hours) return fail(std::move(hours).error());
  stats.hour_buckets = *hours;
  CARDIAC_TRY(set_rolled_up_until(db, "1h", hour_end));

  CARDIAC_TRY(tx->commit());
  return stats;
}

Result<PruneStats> prune(Db& db, TimeNs now, const RetentionPolicy& policy) {
  auto minute_done = rolled_up_until(db, "1m");
  if (!minute_done) return fail(std::move(minute_done).error());
  auto hour_done = rolled_up_until(db, "1h");
  if (!hour_done) return fail(std::move(hour_done).error());

  auto tx = Transaction::begin(db);
  if (!tx) return fail(std::move(tx).error());
  PruneStats stats;
  // Raw samples: legacy rows by time, sealed chunks a whole seal at a time (the tail is the
  // writer's latest minutes and is never old enough).
  const TimeNs raw_before = std::min(now - policy.raw_keep, minute_done->value_or(kBeginning));
  auto raw = prune_table(db, "samples", "time_ns", raw_before);
  if (!raw) return fail(std::move(raw).error());
  stats.raw = *raw;
  if (raw_before != kBeginning) {
    auto sealed = prune_seals_locked(db, raw_before);
    if (!sealed) return fail(std::move(sealed).error());
    stats.raw += *sealed;
  }
  const TimeNs minute_before = std::min(now - policy.minute_keep, hour_done->value_or(kBeginning));
  auto minute = prune_table(db, "rollup_1m", "bucket_ns", minute_before);
  if (!minute) return fail(std::move(minute).error());
  stats.minute = *minute;
  auto blocks = prune_minute_blocks_locked(db, minute_before);
  if (!blocks) return fail(std::move(blocks).error());
  stats.minute += *blocks;
  auto hour = prune_table(db, "rollup_1h", "bucket_ns", now - policy.hour_keep);
  if (!hour) return fail(std::move(hour).error());
  stats.hour = *hour;
  CARDIAC_TRY(tx->commit());
  return stats;
}

}  // namespace cardiac::store
