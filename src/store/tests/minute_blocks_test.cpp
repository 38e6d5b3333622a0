// SPDX-License-Identifier: Apache-2.0
// Tests for minute roll-ups stored as blocks: the codec, what a roll-up writes, rows of the older
// table, pruning by minute.
#include "store/minute_blocks.h"

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <limits>

#include "store/query.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "store/tail_log.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

using testing::scalar;
using testing::TempDir;

constexpr TimeNs kBlocksHour0 = 1'700'002'800LL * kNsPerSec;
static_assert(kBlocksHour0 % kHourNs == 0);

std::uintmax_t wal_size(const std::string& db) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(db + "-wal", ec);
  return ec ? 0 : n;
}

// `seconds` of GPU 0 and 1 temperatures and the host load from kHour0, one flush per 5 s.
void write_seconds(Db& db, int seconds) {
  SampleWriter w(db);
  for (int s = 0; s < seconds; ++s) {
    const TimeNs t = kBlocksHour0 + s * kNsPerSec + (s * 7919) % 900'000;
    ASSERT_TRUE(w.append("gpu_temperature", 0u, t, 60 + s % 7));
    ASSERT_TRUE(w.append("gpu_temperature", 1u, t, 50.25 + (s * 31 % 11) * 0.1));
    ASSERT_TRUE(w.append("host_load1", std::nullopt, t, 0.5));
    if (s % 5 == 4) {
      ASSERT_TRUE(w.flush());
    }
  }
  ASSERT_TRUE(w.flush());
}

TEST(StoreMinuteBlocks, CodecRoundTripsBitForBitAndRefusesDamage) {
  const TimeNs hour = kBlocksHour0;
  std::vector<MinuteBucket> in{
      {hour, 1, 1, 1, 60},
      {hour + 2 * kMinuteNs, -0.0, 0.1 + 0.2, std::numeric_limits<double>::infinity(), 3},
      {hour + 59 * kMinuteNs, std::numeric_limits<double>::quiet_NaN(), 7.5, 9, 1}};
  const std::string data = encode_minute_block(hour, in);
  auto out = decode_minute_block(data, hour);
  ASSERT_TRUE(out) << out.error().what();
  ASSERT_EQ(out->size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].bucket, in[i].bucket);
    EXPECT_EQ(std::bit_cast<std::uint64_t>((*out)[i].min), std::bit_cast<std::uint64_t>(in[i].min));
    EXPECT_EQ(std::bit_cast<std::uint64_t>((*out)[i].avg), std::bit_cast<std::uint64_t>(in[i].avg));
    EXPECT_EQ(std::bit_cast<std::uint64_t>((*out)[i].max), std::bit_cast<std::uint64_t>(in[i].max));
    EXPECT_EQ((*out)[i].count, in[i].count);
  }
  // A constant minute alone: the format byte, the bucket count, then 8 bits of offset, 14 of
  // count (1 + 7 of width + 6: 60 samples), 2 of flags and the double's 64: 13 bytes.
  EXPECT_EQ(encode_minute_block(hour, std::vector<MinuteBucket>{in[0]}).size(), 1u + 1 + 11);
  // Negative times round towards zero, as SQL's % does: minutes before their block's hour.
  const TimeNs neg = -90 * kNsPerSec;
  const MinuteBucket early{neg - neg % kMinuteNs, 2, 2, 2, 1};
  auto back = decode_minute_block(encode_minute_block(block_hour(early.bucket), {&early, 1}),
                                  block_hour(early.bucket));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->front().bucket, early.bucket);
  for (std::size_t cut = 0; cut < data.size(); ++cut) {
    EXPECT_FALSE(decode_minute_block(data.substr(0, cut), hour)) << cut;
  }
  EXPECT_FALSE(decode_minute_block(data + "x", hour));
}

// A series read at 1 s for an hour: each minute's bucket XORed with the one before costs a few
// bits where it repeats, not three doubles.
TEST(StoreMinuteBlocks, AnHourOfMinutesPacksWhatRepeats) {
  const TimeNs hour = kBlocksHour0;
  std::vector<MinuteBucket> constant;
  std::vector<MinuteBucket> temperature;
  for (int m = 0; m < 60; ++m) {
    const TimeNs t = hour + m * kMinuteNs;
    constant.push_back({t, 700, 700, 700, 60});
    // Integer readings between 55 and 58: min and max repeat, the mean does not.
    temperature.push_back({t, 55.0 + m % 2, 56.0 + (m * 7 % 23) / 22.0, 57.0 + m % 3, 60});
  }
  const std::string flat = encode_minute_block(hour, constant);
  const std::string warm = encode_minute_block(hour, temperature);
  // 2 bytes of header, 88 bits for the first minute (8 of offset, 14 of count, 2 of flags, 64),
  // 5 bits for each after it: 50 bytes (the first layout: 11 bytes a minute, 660).
  EXPECT_LE(flat.size(), 50u);
  // The first layout: 27 bytes a minute, 1,621.
  EXPECT_LT(warm.size(), 900u);
  for (const auto* block : {&flat, &warm}) {
    auto back = decode_minute_block(*block, hour);
    ASSERT_TRUE(back) << back.error().what();
    const auto& in = block == &flat ? constant : temperature;
    ASSERT_EQ(back->size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ((*back)[i].bucket, in[i].bucket);
      EXPECT_EQ((*back)[i].min, in[i].min);
      EXPECT_EQ((*back)[i].avg, in[i].avg);
      EXPECT_EQ((*back)[i].max, in[i].max);
      EXPECT_EQ((*back)[i].count, in[i].count);
    }
  }
}

// Blocks written before the packed layout stay readable: varints of the bucket count, each
// bucket's zigzagged minute and count, a flags byte and the doubles little-endian.
TEST(StoreMinuteBlocks, BlocksOfTheFirstLayoutStillDecode) {
  const TimeNs hour = kBlocksHour0;
  std::string old;
  const auto put_double = [&old](double d) {
    const auto u = std::bit_cast<std::uint64_t>(d);
    for (int i = 0; i < 8; ++i) old.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  };
  old += '\x02';
  old += '\x06';  // minute 3
  old += '\x3c';  // 60 samples
  old += '\x03';  // max and avg equal min
  put_double(41.5);
  old += '\x0a';  // minute 5
  old += '\x3b';  // 59 samples
  old += '\x00';
  put_double(40);
  put_double(44);
  put_double(42.25);
  auto back = decode_minute_block(old, hour);
  ASSERT_TRUE(back) << back.error().what();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].bucket, hour + 3 * kMinuteNs);
  EXPECT_EQ((*back)[0].max, 41.5);
  EXPECT_EQ((*back)[0].count, 60);
  EXPECT_EQ((*back)[1].bucket, hour + 5 * kMinuteNs);
  EXPECT_EQ((*back)[1].min, 40);
  EXPECT_EQ((*back)[1].max, 44);
  EXPECT_EQ((*back)[1].avg, 42.25);
  EXPECT_EQ((*back)[1].count, 59);
  EXPECT_FALSE(decode_minute_block(old.substr(0, old.size() - 1), hour));
}

TEST(StoreMinuteBlocks, WholeHourRollUpAppendsOneBlockPerSeriesAndAnIdleRunWritesNothing) {
  TempDir dir;
  const std::string path = dir.file("cardiac.db");
  Db db = testing::open_test_store(dir);
  write_seconds(db, 2 * 3600);
  const TimeNs now = kBlocksHour0 + 2 * kHourNs + 5 * kMinuteNs;
  auto stats = roll_up(db, rollup_horizon(now).minutes);
  ASSERT_TRUE(stats) << stats.error().what();
  EXPECT_EQ(rolled_up_until(db, "1m").value(), kBlocksHour0 + 2 * kHourNs);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1m_blocks"), 3 * 2);
  EXPECT_EQ(scalar(db, "SELECT sum(buckets) FROM rollup_1m_blocks"), 3 * 120);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1m"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1h"), 3 * 2);

  // Ten minutes later the horizon has not moved: the run recomputes the minutes and the hour
  // behind it (kRollupLateness), finds them unchanged and writes no page.
  ASSERT_TRUE(db.exec("PRAGMA wal_checkpoint(TRUNCATE)"));
  const auto before = wal_size(path);
  ASSERT_TRUE(roll_up(db, rollup_horizon(now + 10 * kMinuteNs).minutes));
  EXPECT_EQ(wal_size(path), before);
}

TEST(StoreMinuteBlocks, AnswersAreTheSameAtEveryRollUpPoint) {
  TempDir dir;
  Db often = testing::open_test_store(dir, "often.db");
  Db hourly = testing::open_test_store(dir, "hourly.db");
  write_seconds(often, 2 * 3600 + 600);
  write_seconds(hourly, 2 * 3600 + 600);
  // One store rolled up every 10 minutes to the minute (rewriting blocks), one to whole hours.
  for (TimeNs t = kBlocksHour0 + 10 * kMinuteNs; t <= kBlocksHour0 + 2 * kHourNs + 10 * kMinuteNs;
       t += 10 * kMinuteNs) {
    ASSERT_TRUE(roll_up(often, t));
  }
  ASSERT_TRUE(roll_up(hourly, rollup_horizon(kBlocksHour0 + 2 * kHourNs + 10 * kMinuteNs).minutes));
  const std::string rows =
      "SELECT group_concat(printf('%d %d %d %!.17g %!.17g %!.17g %d', metric_id, gpu, bucket_ns, "
      "min, avg, max, count), ';') FROM (SELECT * FROM minute_rows WHERE bucket_ns < ?1 ORDER BY "
      "metric_id, gpu, bucket_ns)";
  testing::copy_minute_rows(often);
  testing::copy_minute_rows(hourly);
  const auto text = [&](Db& db) {
    auto st = db.prepare(rows);
    EXPECT_TRUE(st);
    st->bind_all(kBlocksHour0 + 2 * kHourNs);
    auto row = st->step();
    EXPECT_TRUE(row && *row);
    return st->column_text(0);
  };
  EXPECT_EQ(text(often), text(hourly));
  const std::string hours =
      "SELECT group_concat(printf('%!.17g', avg), ';') FROM (SELECT avg FROM rollup_1h ORDER BY "
      "metric_id, gpu, bucket_ns)";
  EXPECT_EQ(often.query_text(hours).value(), hourly.query_text(hours).value());
  for (DurationNs step : {kMinuteNs, 7 * kMinuteNs, kHourNs}) {
    const HistoryQuery q{"gpu_temperature", 1u, kBlocksHour0, kBlocksHour0 + 2 * kHourNs, step};
    auto a = history(often, q);
    auto b = history(hourly, q);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->points.size(), b->points.size());
    for (std::size_t i = 0; i < a->points.size(); ++i) {
      EXPECT_EQ(a->points[i].time, b->points[i].time);
      EXPECT_EQ(a->points[i].avg, b->points[i].avg) << step << " " << i;
      EXPECT_EQ(a->points[i].min, b->points[i].min);
      EXPECT_EQ(a->points[i].max, b->points[i].max);
      EXPECT_EQ(a->points[i].count, b->points[i].count);
    }
  }
}

TEST(StoreMinuteBlocks, HoursRolledUpLaterThanTheirMinutesAreTheSame) {
  TempDir dir;
  Db later = testing::open_test_store(dir, "later.db");
  Db at_once = testing::open_test_store(dir, "at_once.db");
  write_seconds(later, 3 * 3600);
  write_seconds(at_once, 3 * 3600);
  const TimeNs end = kBlocksHour0 + 3 * kHourNs;
  // Minutes hour by hour with no hour rows yet, as the agent does within a day, then the hours.
  for (int h = 1; h <= 3; ++h)
    ASSERT_TRUE(roll_up(later, kBlocksHour0 + h * kHourNs, kBlocksHour0));
  EXPECT_EQ(scalar(later, "SELECT count(*) FROM rollup_1h"), 0);
  auto from_minutes = history(later, {"host_load1", std::nullopt, kBlocksHour0, end, kHourNs});
  ASSERT_TRUE(from_minutes);
  EXPECT_EQ(from_minutes->points.size(), 3u);
  ASSERT_TRUE(roll_up(later, end, end));
  ASSERT_TRUE(roll_up(at_once, end));
  const std::string hours =
      "SELECT group_concat(printf('%d %d %d %!.17g %!.17g %!.17g %d', metric_id, gpu, bucket_ns, "
      "min, avg, max, count), ';') FROM (SELECT * FROM rollup_1h ORDER BY metric_id, gpu, "
      "bucket_ns)";
  EXPECT_EQ(scalar(later, "SELECT count(*) FROM rollup_1h"), 3 * 3);
  EXPECT_EQ(later.query_text(hours).value(), at_once.query_text(hours).value());
}

TEST(StoreMinuteBlocks, RowsOfTheOlderTableStayAndARecomputedMinuteMovesIntoItsBlock) {
  TempDir dir;
  std::vector<HistoryPoint> before;
  const HistoryQuery q{"gpu_temperature", 0u, kBlocksHour0, kBlocksHour0 + kHourNs, 5 * kMinuteNs};
  {
    // A store as version 6 rolled it up: rows in rollup_1m up to minute 30.
    Db db = testing::open_test_store(dir);
    write_seconds(db, 3600);
    ASSERT_TRUE(roll_up(db, kBlocksHour0 + 30 * kMinuteNs));
    testing::copy_minute_rows(db);
    ASSERT_TRUE(db.exec(
        "DELETE FROM rollup_1m_blocks; INSERT INTO rollup_1m SELECT bucket_ns, gpu, metric_id, "
        "min, avg, max, count FROM minute_rows"));
    auto h = history(db, q);
    ASSERT_TRUE(h);
    before = h->points;
    // Its tail was a table then: seal what the files hold before they go.
    ASSERT_TRUE(db.exec(testing::kUndoMigration8));
    ASSERT_TRUE(seal_tail(db));
    ASSERT_TRUE(db.exec(
        "DROP TABLE tail_log; DROP TABLE rollup_1m_blocks; DELETE FROM schema_version WHERE "
        "version >= 7"));
    std::filesystem::remove(tail_log_path(dir.file("cardiac.db"), 0));
    std::filesystem::remove(tail_log_path(dir.file("cardiac.db"), 1));
  }
  Db db = testing::open_test_store(dir);
  ASSERT_EQ(schema_version(db).value(), latest_schema_version());
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1m"), 3 * 30);
  auto same = history(db, q);
  ASSERT_TRUE(same);
  ASSERT_EQ(same->points.size(), before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(same->points[i].avg, before[i].avg);
    EXPECT_EQ(same->points[i].count, before[i].count);
  }
  // The next run recomputes minutes 28 and 29 (kRollupLateness): they leave the table for the
  // block, so no minute is counted twice.
  ASSERT_TRUE(roll_up(db, kBlocksHour0 + kHourNs));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1m"), 3 * 28);
  EXPECT_EQ(scalar(db, "SELECT sum(buckets) FROM rollup_1m_blocks"), 3 * 32);
  auto after = history(db, q);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->points.size(), 12u);
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after->points[i].avg, before[i].avg);
    EXPECT_EQ(after->points[i].count, before[i].count);
  }
  auto hours = history(db, {"gpu_temperature", 0u, kBlocksHour0, kBlocksHour0 + kHourNs, kHourNs});
  ASSERT_TRUE(hours);
  ASSERT_EQ(hours->points.size(), 1u);
  EXPECT_EQ(hours->points[0].count, 3600);
}

TEST(StoreMinuteBlocks, PruneCutsBlocksAtTheMinute) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  write_seconds(db, 2 * 3600);
  ASSERT_TRUE(roll_up(db, kBlocksHour0 + 2 * kHourNs));
  RetentionPolicy policy;
  const TimeNs now = kBlocksHour0 + 100 * kDayNs;
  // Minutes before kHour0 + 90 min go: all of hour 0's blocks, half of hour 1's.
  policy.minute_keep = now - (kBlocksHour0 + 90 * kMinuteNs);
  policy.raw_keep = policy.minute_keep;
  auto pruned = prune(db, now, policy);
  ASSERT_TRUE(pruned) << pruned.error().what();
  EXPECT_EQ(pruned->minute, 3 * 90);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM rollup_1m_blocks"), 3);
  EXPECT_EQ(scalar(db, "SELECT sum(buckets) FROM rollup_1m_blocks"), 3 * 30);
  auto left = read_minute_buckets(
      db, {scalar(db, "SELECT id FROM metrics WHERE name = 'host_load1'"), kHostGpu}, kBlocksHour0,
      kBlocksHour0 + 2 * kHourNs);
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 30u);
  EXPECT_EQ(left->front().bucket, kBlocksHour0 + 90 * kMinuteNs);
}

}  // namespace
}  // namespace cardiac::store
