// SPDX-License-Identifier: Apache-2.0
// Tests for roll-ups and pruning on hand-made data.
#include "store/retention.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "store/minute_blocks.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

using testing::scalar;

// An hour boundary, so minute and hour buckets are easy to name.
constexpr TimeNs kRetentionHour0 = 1'700'002'800LL * kNsPerSec;
static_assert(kRetentionHour0 % kHourNs == 0);

struct Bucket {
  double min, avg, max;
  std::int64_t count;
};

Bucket bucket(const Db& db, const char* table, std::int64_t gpu, TimeNs at) {
  if (std::string_view(table) == "rollup_1m") {
    // Minute buckets live in blocks: read them back the way queries do.
    auto metric =
        db.query_int64("SELECT id FROM metrics WHERE name = '" +
                       std::string(gpu == kHostGpu ? "host_load1" : "gpu_temperature") + "'");
    EXPECT_TRUE(metric && *metric);
    auto got = read_minute_buckets(db, {metric->value_or(0), gpu}, at, at + 1);
    EXPECT_TRUE(got && got->size() == 1) << table << " gpu " << gpu << " at " << at;
    if (!got || got->size() != 1) return {};
    const MinuteBucket& b = got->front();
    return {b.min, b.avg, b.max, b.count};
  }
  auto st = db.prepare(std::string("SELECT min, avg, max, count FROM ") + table +
                       " WHERE gpu = ? AND bucket_ns = ?");
  EXPECT_TRUE(st);
  st->bind_all(gpu, at);
  auto row = st->step();
  EXPECT_TRUE(row && *row) << table << " gpu " << gpu << " at " << at;
  if (!row || !*row) return {};
  return {st->column_double(0), st->column_double(1), st->column_double(2), st->column_int64(3)};
}

// Minute buckets stored (rows of the older table and buckets of blocks), `where` applied to both.
std::int64_t minute_buckets(const Db& db, const std::string& where) {
  return scalar(db, "SELECT (SELECT count(*) FROM rollup_1m " + where +
                        ") + (SELECT coalesce(sum(buckets), 0) FROM rollup_1m_blocks " + where +
                        ")");
}

// Values first..last, one per second from `start`, for GPU 0 and the host.
void write_ramp(Db& db, TimeNs start, int first, int last) {
  SampleWriter w(db);
  for (int v = first; v <= last; ++v) {
    const TimeNs t = start + (v - first) * kNsPerSec;
    ASSERT_TRUE(w.append("gpu_temperature", 0u, t, v));
    ASSERT_TRUE(w.append("host_load1", std::nullopt, t, v));
  }
  ASSERT_TRUE(w.flush());
}

TEST(StoreRetention, MinuteBucketIsExact) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  write_ramp(db, kRetentionHour0, 1, 60);
  auto stats = roll_up(db, kRetentionHour0 + 2 * kMinuteNs);
  ASSERT_TRUE(stats) << stats.error().what();
  EXPECT_EQ(stats->minute_buckets, 2);  // GPU 0 and host
  for (std::int64_t gpu : {std::int64_t{0}, kHostGpu}) {
    Bucket b = bucket(db, "rollup_1m", gpu, kRetentionHour0);
    EXPECT_DOUBLE_EQ(b.min, 1);
    EXPECT_DOUBLE_EQ(b.avg, 30.5);
    EXPECT_DOUBLE_EQ(b.max, 60);
    EXPECT_EQ(b.count, 60);
  }
}

TEST(StoreRetention, CurrentMinuteWaitsAndLaterRunsPickItUp) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  write_ramp(db, kRetentionHour0, 1, 90);  // 60 s in minute 0, 30 s in minute 1
  ASSERT_TRUE(roll_up(db, kRetentionHour0 + kMinuteNs + 45 * kNsPerSec));
  EXPECT_EQ(minute_buckets(db, "WHERE gpu = 0"), 1);
  ASSERT_TRUE(roll_up(db, kRetentionHour0 + 2 * kMinuteNs));
  EXPECT_EQ(minute_buckets(db, "WHERE gpu = 0"), 2);
  Bucket b = bucket(db, "rollup_1m", 0, kRetentionHour0 + kMinuteNs);
  EXPECT_DOUBLE_EQ(b.min, 61);
  EXPECT_DOUBLE_EQ(b.max, 90);
  EXPECT_EQ(b.count, 30);
}

TEST(StoreRetention, HourBucketFromMinutesAndIdempotent) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  write_ramp(db, kRetentionHour0, 1, 120);
  const TimeNs now = kRetentionHour0 + kHourNs + 5 * kMinuteNs;
  ASSERT_TRUE(roll_up(db, now));
  for (int run = 0; run < 2; ++run) {
    Bucket h = bucket(db, "rollup_1h", kHostGpu, kRetentionHour0);
    EXPECT_DOUBLE_EQ(h.min, 1);
    EXPECT_DOUBLE_EQ(h.avg, 60.5);
    EXPECT_DOUBLE_EQ(h.max, 120);
    EXPECT_EQ(h.count, 120);
    EXPECT_EQ(minute_buckets(db, ""), 4);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1h"), 2);
    // Re-running, even with the state forgotten, replaces buckets rather than adding rows.
    ASSERT_TRUE(db.exec("DELETE FROM rollup_state"));
    ASSERT_TRUE(roll_up(db, now));
  }
}

TEST(StoreRetention, PruneRemovesByAgeOnceRolledUp) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  const TimeNs now = kRetentionHour0 + 10 * kDayNs;
  write_ramp(db, kRetentionHour0, 1, 60);    // 10 days old
  write_ramp(db, now - 2 * kHourNs, 1, 60);  // recent

  // Nothing rolled up yet: raw rows are the only copy, so nothing goes.
  auto early = prune(db, now);
  ASSERT_TRUE(early) << early.error().what();
  EXPECT_EQ(early->raw, 0);
  EXPECT_EQ(count_raw_samples(db).value(), 240);

  ASSERT_TRUE(roll_up(db, now));
  auto pruned = prune(db, now);
  ASSERT_TRUE(pruned) << pruned.error().what();
  EXPECT_EQ(pruned->raw, 120);
  EXPECT_EQ(count_raw_samples(db).value(), 120);
  const auto rows = testing::raw_rows(db);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(std::min_element(rows.begin(), rows.end(),
                             [](const auto& a, const auto& b) { return a.time < b.time; })
                ->time,
            now - 2 * kHourNs);
  EXPECT_EQ(minute_buckets(db, ""), 4);  // 90 days kept

  RetentionPolicy tight;
  tight.minute_keep = kDayNs;
  tight.hour_keep = 5 * kDayNs;
  auto more = prune(db, now, tight);
  ASSERT_TRUE(more);
  EXPECT_EQ(more->minute, 2);
  EXPECT_EQ(more->hour, 2);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1h"), 2);  // the recent hour remains
}

TEST(StoreRetention, ListSeriesFindsHostAndEachGpu) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  // Rows of the `samples` table as stores before compressed samples hold them.
  ASSERT_TRUE(
      db.exec("INSERT INTO metrics(id, name) VALUES (1, 'a'), (2, 'b');"
              "INSERT INTO samples(time_ns, gpu, metric_id, value) VALUES "
              "(0, 0, 1, 1), (0, 3, 1, 1), (0, 7, 1, 1), (0, NULL, 1, 1), (0, 1, 2, 1)"));
  auto series = list_series(db, "samples");
  ASSERT_TRUE(series);
  ASSERT_EQ(series->size(), 5u);
  EXPECT_FALSE((*series)[0].gpu);
  EXPECT_EQ((*series)[1].gpu, 0);
  EXPECT_EQ((*series)[3].gpu, 7);
  EXPECT_EQ((*series)[4].gpu, 1);
}

}  // namespace
}  // namespace cardiac::store
