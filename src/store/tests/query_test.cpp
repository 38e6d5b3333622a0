// SPDX-License-Identifier: Apache-2.0
// Tests for history queries and the resolution rule.
#include "store/query.h"

#include <gtest/gtest.h>

#include "store/retention.h"
#include "store/sealed.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

constexpr TimeNs kQueryHour0 = 1'700'002'800LL * kNsPerSec;

// Two hours of 1 s GPU 2 temperatures: value = minute index within the two hours. One flush
// per hour: each is sealed on its own.
void write_two_hours(Db& db) {
  SampleWriter w(db);
  for (int s = 0; s < 7200; ++s) {
    ASSERT_TRUE(w.append("gpu_temperature", 2u, kQueryHour0 + s * kNsPerSec, s / 60));
    if (s % 3600 == 3599) {
      ASSERT_TRUE(w.flush());
    }
  }
}

TEST(StoreQuery, ResolutionRule) {
  EXPECT_EQ(choose_resolution(kNsPerSec), Resolution::kRaw);
  EXPECT_EQ(choose_resolution(59 * kNsPerSec), Resolution::kRaw);
  EXPECT_EQ(choose_resolution(kMinuteNs), Resolution::kMinute);
  EXPECT_EQ(choose_resolution(30 * kMinuteNs), Resolution::kMinute);
  EXPECT_EQ(choose_resolution(kHourNs), Resolution::kHour);
  EXPECT_EQ(choose_resolution(kDayNs), Resolution::kHour);
}

TEST(StoreQuery, PicksLevelByStepAndAggregates) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  write_two_hours(db);
  ASSERT_TRUE(roll_up(db, kQueryHour0 + 2 * kHourNs));
  // Remove the raw rows of the first hour: a minute or hour query that still finds them
  // would have read the wrong level.
  {
    auto tx = Transaction::begin(db);
    ASSERT_TRUE(tx);
    EXPECT_EQ(prune_seals_locked(db, kQueryHour0 + kHourNs).value(), 3600);
    ASSERT_TRUE(tx->commit());
  }

  auto raw =
      history(db, {"gpu_temperature", 2u, kQueryHour0, kQueryHour0 + 2 * kHourNs, 10 * kNsPerSec});
  ASSERT_TRUE(raw) << raw.error().what();
  EXPECT_EQ(raw->resolution, Resolution::kRaw);
  EXPECT_EQ(raw->points.size(), 360u);  // only the second hour is raw now

  auto minutes =
      history(db, {"gpu_temperature", 2u, kQueryHour0, kQueryHour0 + 2 * kHourNs, 5 * kMinuteNs});
  ASSERT_TRUE(minutes);
  EXPECT_EQ(minutes->resolution, Resolution::kMinute);
  ASSERT_EQ(minutes->points.size(), 24u);
  EXPECT_EQ(minutes->points[0].time, kQueryHour0);
  EXPECT_DOUBLE_EQ(minutes->points[0].avg, 2);  // minutes 0..4
  EXPECT_DOUBLE_EQ(minutes->points[0].min, 0);
  EXPECT_DOUBLE_EQ(minutes->points[0].max, 4);
  EXPECT_EQ(minutes->points[0].count, 300);

  auto hours =
      history(db, {"gpu_temperature", 2u, kQueryHour0, kQueryHour0 + 2 * kHourNs, kHourNs});
  ASSERT_TRUE(hours);
  EXPECT_EQ(hours->resolution, Resolution::kHour);
  ASSERT_EQ(hours->points.size(), 2u);
  EXPECT_DOUBLE_EQ(hours->points[0].avg, 29.5);
  EXPECT_DOUBLE_EQ(hours->points[1].max, 119);
  EXPECT_EQ(hours->points[1].count, 3600);
}

TEST(StoreQuery, NotYetRolledUpRangeComesFromRaw) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  write_two_hours(db);
  ASSERT_TRUE(roll_up(db, kQueryHour0 + kHourNs + 30 * kMinuteNs));  // hour 1 not complete
  auto hours =
      history(db, {"gpu_temperature", 2u, kQueryHour0, kQueryHour0 + 2 * kHourNs, kHourNs});
  ASSERT_TRUE(hours);
  ASSERT_EQ(hours->points.size(), 2u);
  EXPECT_EQ(hours->points[1].count, 3600);  // 30 min from rollup_1m + 30 min raw
  EXPECT_DOUBLE_EQ(hours->points[1].avg, 89.5);
}

// The agent rolls up every few minutes, not every minute (src/agent/loops.cpp): a minute-level
// query must give the same answer whatever part of its range has been rolled up yet, the rest
// coming from raw samples.
TEST(StoreQuery, MinuteStepsDoNotDependOnHowFarRollUpsHaveGot) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  {
    SampleWriter w(db);
    for (int s = 0; s < 7200; ++s) {
      ASSERT_TRUE(w.append("gpu_temperature", 2u, kQueryHour0 + s * kNsPerSec,
                           (s * 7 % 13) * 0.25 + s / 60));
      if (s % 5 == 4) {
        ASSERT_TRUE(w.flush());
      }
    }
    ASSERT_TRUE(w.flush());
  }
  const auto ask = [&](DurationNs step) {
    auto h = history(db, {"gpu_temperature", 2u, kQueryHour0, kQueryHour0 + 2 * kHourNs, step});
    EXPECT_TRUE(h) << h.error().what();
    return h ? h->points : std::vector<HistoryPoint>{};
  };
  const auto expect_same = [](const std::vector<HistoryPoint>& got,
                              const std::vector<HistoryPoint>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].time, want[i].time) << i;
      EXPECT_EQ(got[i].count, want[i].count) << i;
      EXPECT_DOUBLE_EQ(got[i].min, want[i].min) << i;
      EXPECT_DOUBLE_EQ(got[i].max, want[i].max) << i;
      EXPECT_DOUBLE_EQ(got[i].avg, want[i].avg) << i;  // sum(avg × count) vs a sum of samples
    }
  };

  const auto raw_minutes = ask(kMinuteNs);
  const auto raw_fives = ask(5 * kMinuteNs);
  ASSERT_EQ(raw_minutes.size(), 120u);
  ASSERT_EQ(raw_fives.size(), 24u);

  // Rolled up to minute 73 (hours: to minute 60): minutes 73.. come from raw samples, and the
  // 5-minute step at 70 takes three minute buckets and two minutes of samples.
  ASSERT_TRUE(roll_up(db, kQueryHour0 + 73 * kMinuteNs + 30 * kNsPerSec));
  ASSERT_EQ(rolled_up_until(db, "1m").value(), kQueryHour0 + 73 * kMinuteNs);
  expect_same(ask(kMinuteNs), raw_minutes);
  expect_same(ask(5 * kMinuteNs), raw_fives);

  ASSERT_TRUE(roll_up(db, kQueryHour0 + 2 * kHourNs + kMinuteNs));
  expect_same(ask(kMinuteNs), raw_minutes);
  expect_same(ask(5 * kMinuteNs), raw_fives);
}

TEST(StoreQuery, UnknownMetricIsEmptyAndBadStepIsAnError) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  auto none = history(db, {"nope", std::nullopt, 0, kQueryHour0, kNsPerSec});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->points.empty());
  EXPECT_FALSE(history(db, {"nope", std::nullopt, 0, kQueryHour0, 0}));
}

}  // namespace
}  // namespace cardiac::store

namespace cardiac::store {
namespace {

// A chart reads several series of one GPU through one TailCache: the same answers as reading
// each on its own, tail and sealed samples alike; another GPU's series is read past the cache.
TEST(StoreQuery, TailCacheGivesTheSameAnswers) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  {
    SampleWriter w(db);
    for (int s = 0; s < 900; ++s) {
      const TimeNs t = kQueryHour0 + s * kNsPerSec;
      ASSERT_TRUE(w.append("gpu_temperature", 2u, t, 40 + s % 7));
      ASSERT_TRUE(w.append("gpu_power_usage", 2u, t, 300 + s % 11));
      ASSERT_TRUE(w.append("gpu_temperature", 3u, t, 50 + s % 5));
      if (s % 50 == 49) {
        ASSERT_TRUE(w.flush());  // past 600 points a series' tail is sealed
      }
    }
    ASSERT_TRUE(w.flush());
  }
  TailCache tail{.gpu = 2, .loaded = false, .series = {}};
  for (const char* metric : {"gpu_temperature", "gpu_power_usage"}) {
    for (DurationNs step : {kNsPerSec, 10 * kNsPerSec, kMinuteNs}) {
      const HistoryQuery q{metric, 2u, kQueryHour0, kQueryHour0 + 900 * kNsPerSec, step};
      auto plain = history(db, q);
      auto cached = history(db, q, &tail);
      ASSERT_TRUE(plain && cached);
      ASSERT_FALSE(plain->points.empty());
      ASSERT_EQ(plain->points.size(), cached->points.size()) << metric;
      for (std::size_t i = 0; i < plain->points.size(); ++i) {
        EXPECT_EQ(plain->points[i].time, cached->points[i].time);
        EXPECT_EQ(plain->points[i].count, cached->points[i].count);
        EXPECT_DOUBLE_EQ(plain->points[i].avg, cached->points[i].avg);
      }
    }
  }
  EXPECT_TRUE(tail.loaded);
  for (const auto& [key, points] : tail.series) EXPECT_EQ(key.gpu, 2);
  const HistoryQuery other{"gpu_temperature", 3u, kQueryHour0, kQueryHour0 + 900 * kNsPerSec,
                           kNsPerSec};
  auto three = history(db, other, &tail);
  ASSERT_TRUE(three);
  EXPECT_EQ(three->points.size(), 900u);
}

}  // namespace
}  // namespace cardiac::store
