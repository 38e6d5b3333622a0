// SPDX-License-Identifier: Apache-2.0
// Tests for compressed samples: the tail, sealing, reading back, and the older `samples` rows.
#include "store/sealed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "store/query.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

using testing::scalar;
using testing::tail_records;
using testing::TempDir;

constexpr TimeNs kHour0 = 1'700'002'800LL * kNsPerSec;

// `seconds` seconds from kHour0 of `metrics` × `gpus` series named `<prefix><m>`, a flush every
// `flush_every` seconds and one at the end; `value(m, g, i)` gives each point (nullopt: none).
template <class Value>
void write_grid(SampleWriter& w, std::string_view prefix, int metrics, unsigned gpus, int seconds,
                int flush_every, const Value& value) {
  for (int i = 0; i < seconds; ++i) {
    for (int m = 0; m < metrics; ++m) {
      for (unsigned g = 0; g < gpus; ++g) {
        const std::optional<double> v = value(m, g, i);
        if (!v) continue;
        ASSERT_TRUE(w.append(fmt::format("{}{}", prefix, m), g, kHour0 + i * kNsPerSec, *v));
      }
    }
    if (i % flush_every == flush_every - 1) {
      ASSERT_TRUE(w.flush());
    }
  }
  ASSERT_TRUE(w.flush());
}

struct Sample {
  TimeNs time;
  std::optional<unsigned> gpu;
  std::string metric;
  double value;
};

// Two hours at 1 s of two GPU metrics on GPUs 0 and 3 and one host metric, stamped with a
// clock's jitter, with fractional values (so the sums' order matters) and a gap.
std::vector<Sample> realistic_samples() {
  std::vector<Sample> v;
  for (int s = 0; s < 7200; ++s) {
    if (s >= 1000 && s < 1100) continue;  // the agent was down
    const TimeNs t = kHour0 + s * kNsPerSec + (s * 7919) % 900'000;
    for (unsigned g : {0u, 3u}) {
      v.push_back({t, g, "gpu_temperature", 60.0 + g + (s * 31 % 7)});
      v.push_back({t, g, "gpu_power_usage_mw", 650'000.25 + std::sin(s * 0.01 + g) * 3000});
    }
    v.push_back({t, std::nullopt, "host_load1", 1.5 + (s % 13) * 0.01});
  }
  return v;
}

void write_through_writer(Db& db, const std::vector<Sample>& samples) {
  SampleWriter w(db);
  TimeNs last = samples.empty() ? 0 : samples.front().time;
  for (const auto& s : samples) {
    // A flush every 5 s of sample time, like the agent's default flush_interval.
    if (s.time - last >= 5 * kNsPerSec) {
      ASSERT_TRUE(w.flush());
      last = s.time;
    }
    ASSERT_TRUE(w.append(s.metric, s.gpu, s.time, s.value));
  }
  ASSERT_TRUE(w.flush());
}

// The layout before migration 6: one `samples` row per reading.
void write_legacy_rows(Db& db, const std::vector<Sample>& samples) {
  auto tx = Transaction::begin(db);
  ASSERT_TRUE(tx);
  for (const auto& s : samples) {
    ASSERT_TRUE(db.exec("INSERT OR IGNORE INTO metrics(name) VALUES ('" + s.metric + "')"));
    auto st = db.prepare(
        "INSERT INTO samples(time_ns, gpu, metric_id, value) "
        "VALUES (?1, ?2, (SELECT id FROM metrics WHERE name = ?3), ?4)");
    ASSERT_TRUE(st);
    ASSERT_TRUE(st->bind_all(s.time, s.gpu, s.metric, s.value).run());
  }
  ASSERT_TRUE(tx->commit());
}

// What history() answered for raw steps before chunks: SQL's aggregates over the samples rows.
std::vector<HistoryPoint> legacy_raw_history(const Db& db, const HistoryQuery& q) {
  auto st = db.prepare(
      "SELECT time_ns - (time_ns % ?1), min(value), max(value), sum(value), count(*) "
      "FROM samples WHERE metric_id = (SELECT id FROM metrics WHERE name = ?2) AND gpu IS ?3 "
      "AND time_ns >= ?4 AND time_ns < ?5 GROUP BY 1 ORDER BY 1");
  EXPECT_TRUE(st);
  st->bind_all(q.step, q.metric, q.gpu, q.since, q.until);
  std::vector<HistoryPoint> out;
  for (;;) {
    auto row = st->step();
    EXPECT_TRUE(row);
    if (!row || !*row) break;
    const auto n = st->column_int64(4);
    out.push_back({st->column_int64(0), st->column_double(3) / static_cast<double>(n),
                   st->column_double(1), st->column_double(2), n});
  }
  return out;
}

void expect_same_points(const std::vector<HistoryPoint>& got,
                        const std::vector<HistoryPoint>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].time, want[i].time) << i;
    EXPECT_EQ(got[i].avg, want[i].avg) << i;
    EXPECT_EQ(got[i].min, want[i].min) << i;
    EXPECT_EQ(got[i].max, want[i].max) << i;
    EXPECT_EQ(got[i].count, want[i].count) << i;
  }
}

std::vector<HistoryQuery> raw_queries() {
  std::vector<HistoryQuery> qs;
  for (const char* metric : {"gpu_temperature", "gpu_power_usage_mw"}) {
    for (unsigned g : {0u, 3u}) {
      for (DurationNs step : {kNsPerSec, 10 * kNsPerSec, 59 * kNsPerSec}) {
        qs.push_back({metric, g, kHour0 - kHourNs, kHour0 + 3 * kHourNs, step});
      }
      qs.push_back({metric, g, kHour0 + 999 * kNsPerSec, kHour0 + 1234 * kNsPerSec, 7 * kNsPerSec});
    }
  }
  qs.push_back({"host_load1", std::nullopt, kHour0, kHour0 + 2 * kHourNs, 30 * kNsPerSec});
  return qs;
}

TEST(StoreSealed, FlushCommitsOneTailRowThatOtherConnectionsRead) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(w.append("gpu_temperature", 1u, kHour0 + i * kNsPerSec, 60 + i));
    ASSERT_TRUE(w.append("host_load1", std::nullopt, kHour0 + i * kNsPerSec, 0.5));
  }
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(tail_records(db), 1);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_chunks"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM samples"), 0);

  // As if the agent had been killed here: another connection reads what was committed.
  auto reader = open_store(dir.file("cardiac.db"));
  ASSERT_TRUE(reader);
  EXPECT_EQ(count_raw_samples(*reader).value(), 10);
  auto h = history(*reader, {"gpu_temperature", 1u, kHour0, kHour0 + kMinuteNs, kNsPerSec});
  ASSERT_TRUE(h) << h.error().what();
  ASSERT_EQ(h->points.size(), 5u);
  EXPECT_EQ(h->points[4].avg, 64);
  EXPECT_TRUE(has_gpu_series(*reader, "gpu_temperature", 1).value());
  EXPECT_FALSE(has_gpu_series(*reader, "gpu_temperature", 2).value());
}

TEST(StoreSealed, WriterSealsTheTailWhenASeriesReachesTheChunkSize) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  int written = 0;
  for (; written + 5 < static_cast<int>(kSealPoints); written += 5) {
    for (int i = written; i < written + 5; ++i) {
      ASSERT_TRUE(w.append("gpu_temperature", 0u, kHour0 + i * kNsPerSec, i % 9));
    }
    ASSERT_TRUE(w.flush());
  }
  EXPECT_EQ(tail_records(db), written / 5);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 0);
  for (int i = written; i < written + 5; ++i) {
    ASSERT_TRUE(w.append("gpu_temperature", 0u, kHour0 + i * kNsPerSec, i % 9));
  }
  ASSERT_TRUE(w.flush());
  written += 5;
  EXPECT_EQ(tail_records(db), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 1);
  EXPECT_EQ(scalar(db, "SELECT count FROM sample_chunks"), written);
  // The next flush starts a new segment.
  ASSERT_TRUE(w.append("gpu_temperature", 0u, kHour0 + written * kNsPerSec, 1));
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(tail_records(db), 1);
  EXPECT_EQ(count_raw_samples(db).value(), written + 1);
  auto points =
      read_series(db, {scalar(db, "SELECT id FROM metrics"), 0}, kHour0, kHour0 + kHourNs);
  ASSERT_TRUE(points);
  ASSERT_EQ(points->size(), static_cast<std::size_t>(written + 1));
  for (int i = 0; i < written; ++i) {
    EXPECT_EQ((*points)[static_cast<std::size_t>(i)].value, i % 9) << i;
  }
}

// A seal's chunks are made a group of series at a time (the sampler then holds one group's
// points, not the seal's): with 150 series, three groups, every point stays, each series gets
// one chunk, and the chunks go in in key order as one pass wrote them.
TEST(StoreSealed, ASealOfManySeriesKeepsEveryPointInKeyOrder) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  constexpr int kMetrics = 10;
  constexpr unsigned kGpus = 15;
  const auto value = [](int m, unsigned g, int i) { return m * 1000.0 + g * 10.0 + i * 0.25; };
  write_grid(w, "gpu_test_", kMetrics, kGpus, static_cast<int>(kSealPoints), 5,
             [&](int m, unsigned g, int i) { return std::optional(value(m, g, i)); });
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 1);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_chunks"), kMetrics * kGpus);
  EXPECT_EQ(scalar(db, "SELECT sum(count) FROM sample_chunks"),
            kMetrics * kGpus * static_cast<int>(kSealPoints));
  // In key order by insertion (rowid), as the unique index lays a seal's chunks out.
  auto st = db.prepare("SELECT metric_id, gpu FROM sample_chunks ORDER BY id");
  ASSERT_TRUE(st);
  std::vector<std::pair<std::int64_t, std::int64_t>> order;
  while (st->step().value_or(false)) order.emplace_back(st->column_int64(0), st->column_int64(1));
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  const auto rows = testing::raw_rows(db);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kMetrics * kGpus) * kSealPoints);
  for (const auto& r : rows) {
    const int m = std::stoi(r.metric.substr(std::string("gpu_test_").size()));
    const int i = static_cast<int>((r.time - kHour0) / kNsPerSec);
    ASSERT_TRUE(r.gpu);
    EXPECT_EQ(r.value, value(m, static_cast<unsigned>(*r.gpu), i))
        << r.metric << " gpu " << *r.gpu << " at " << i;
  }
}

// A roll-up walks the series a group at a time, each group's tail points decoded anew into one
// block: with more tail points than a group holds (150 series, about 290 s of tail each in the
// range: two groups), in a range that cuts through a seal and the tail, it must give what
// read_all_series() gives (which reads the tail in one go).
TEST(StoreSealed, WalkingManySeriesAGroupAtATimeGivesWhatOneReadGives) {
  constexpr int kMetrics = 15;
  constexpr unsigned kGpus = 10;
  const int seconds = static_cast<int>(kSealPoints) + 300;
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  write_grid(w, "gpu_walk_", kMetrics, kGpus, seconds, 1,
             [](int m, unsigned g, int i) -> std::optional<double> {
               // Some series skip seconds, so the groups' counts differ.
               if ((m + static_cast<int>(g)) % 7 == 0 && i % 3 == 0) return std::nullopt;
               return m * 100.0 + g + i * 0.5;
             });
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 1);
  EXPECT_GT(tail_records(db), 290);
  const TimeNs from = kHour0 + 500 * kNsPerSec;
  const TimeNs to = kHour0 + (seconds - 10) * kNsPerSec;
  auto all = read_all_series(db, from, to);
  ASSERT_TRUE(all) << all.error().what();
  ASSERT_EQ(all->size(), static_cast<std::size_t>(kMetrics) * kGpus);
  std::size_t visited = 0;
  auto walked = for_each_series(db, from, to, [&](const SeriesKey& key, const auto& points) {
    ++visited;
    const auto it = all->find(key);
    EXPECT_NE(it, all->end());
    if (it == all->end()) return Status{};
    EXPECT_EQ(points.size(), it->second.size());
    for (std::size_t i = 0; i < std::min(points.size(), it->second.size()); ++i) {
      EXPECT_EQ(points[i].time, it->second[i].time);
      EXPECT_EQ(points[i].value, it->second[i].value);
    }
    EXPECT_GE(points.front().time, from);
    EXPECT_LT(points.back().time, to);
    return Status{};
  });
  ASSERT_TRUE(walked) << walked.error().what();
  EXPECT_EQ(visited, all->size());
}

TEST(StoreSealed, NextWriterSealsWhatAnEarlierOneLeft) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  {
    SampleWriter first(db);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(first.append("gpu_temperature", 0u, kHour0 + i * kNsPerSec, i));
      if (i % 5 == 4) {
        ASSERT_TRUE(first.flush());
      }
    }
  }
  EXPECT_EQ(tail_records(db), 4);
  SampleWriter second(db);
  ASSERT_TRUE(second.append("gpu_temperature", 0u, kHour0 + 20 * kNsPerSec, 20));
  ASSERT_TRUE(second.flush());
  EXPECT_EQ(tail_records(db), 1);  // the second writer's
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 1);
  EXPECT_EQ(scalar(db, "SELECT end_ns FROM sample_seals"), kHour0 + 19 * kNsPerSec);
  auto h = history(db, {"gpu_temperature", 0u, kHour0, kHour0 + kMinuteNs, kNsPerSec});
  ASSERT_TRUE(h);
  ASSERT_EQ(h->points.size(), 21u);
  for (int i = 0; i <= 20; ++i) EXPECT_EQ(h->points[static_cast<std::size_t>(i)].avg, i);
}

TEST(StoreSealed, HistoryIsWhatTheSamplesTableGave) {
  TempDir dir;
  Db legacy = testing::open_test_store(dir, "legacy.db");
  Db chunked = testing::open_test_store(dir, "chunked.db");
  const auto samples = realistic_samples();
  write_legacy_rows(legacy, samples);
  write_through_writer(chunked, samples);
  EXPECT_GT(scalar(chunked, "SELECT count(*) FROM sample_seals"), 10);
  EXPECT_GT(tail_records(chunked), 0);
  EXPECT_EQ(scalar(chunked, "SELECT count(*) FROM samples"), 0);
  EXPECT_EQ(count_raw_samples(chunked).value(), static_cast<std::int64_t>(samples.size()));

  for (const auto& q : raw_queries()) {
    SCOPED_TRACE(q.metric + " step " + std::to_string(q.step));
    auto got = history(chunked, q);
    ASSERT_TRUE(got) << got.error().what();
    expect_same_points(got->points, legacy_raw_history(legacy, q));
  }

  // Minute roll-ups from chunks equal what the SQL over rows computed, digit for digit.
  const TimeNs now = kHour0 + 3 * kHourNs;
  ASSERT_TRUE(roll_up(chunked, now));
  testing::copy_minute_rows(chunked);
  const std::string format = "printf('%d %d %d %!.17g %!.17g %!.17g %d', m, g, b, lo, a, hi, n)";
  const auto rollup = chunked.query_text(
      "SELECT group_concat(" + format +
      ", ';') FROM (SELECT metric_id AS m, gpu AS g, "
      "bucket_ns AS b, min AS lo, avg AS a, max AS hi, count AS n FROM minute_rows "
      "ORDER BY m, g, b)");
  const auto from_rows = legacy.query_text(
      "SELECT group_concat(" + format +
      ", ';') FROM (SELECT metric_id AS m, "
      "coalesce(gpu, -1) AS g, time_ns - (time_ns % 60000000000) AS b, min(value) AS lo, "
      "avg(value) AS a, max(value) AS hi, count(*) AS n FROM samples GROUP BY m, g, b "
      "ORDER BY m, g, b)");
  ASSERT_TRUE(rollup && from_rows);
  EXPECT_EQ(rollup->value_or(""), from_rows->value_or("-"));
  ASSERT_TRUE(roll_up(legacy, now));
  for (DurationNs step : {kMinuteNs, 5 * kMinuteNs, kHourNs}) {
    HistoryQuery q{"gpu_power_usage_mw", 3u, kHour0, kHour0 + 2 * kHourNs, step};
    auto a = history(legacy, q);
    auto b = history(chunked, q);
    ASSERT_TRUE(a && b);
    expect_same_points(b->points, a->points);
  }
}

TEST(StoreSealed, PreviousSchemaWithRowsMigratesAndKeepsItsHistory) {
  TempDir dir;
  const auto samples = realistic_samples();
  std::vector<std::vector<HistoryPoint>> before;
  {
    // A store as the previous release left it: version 5, samples as rows.
    Db db = testing::open_test_store(dir);
    ASSERT_TRUE(db.exec(testing::kUndoMigration8));
    ASSERT_TRUE(
        db.exec("DROP TABLE sample_chunks; DROP TABLE sample_seals; DROP TABLE sample_tail; "
                "DROP TABLE tail_log; DROP TABLE rollup_1m_blocks; "
                "DELETE FROM schema_version WHERE version >= 6"));
    ASSERT_EQ(schema_version(db).value(), 5);
    write_legacy_rows(db, samples);
    for (const auto& q : raw_queries()) before.push_back(legacy_raw_history(db, q));
  }
  Db db = testing::open_test_store(dir);
  EXPECT_EQ(schema_version(db).value(), latest_schema_version());
  EXPECT_EQ(count_raw_samples(db).value(), static_cast<std::int64_t>(samples.size()));
  const auto check = [&] {
    const auto qs = raw_queries();
    for (std::size_t i = 0; i < qs.size(); ++i) {
      SCOPED_TRACE(qs[i].metric + " step " + std::to_string(qs[i].step));
      auto got = history(db, qs[i]);
      ASSERT_TRUE(got) << got.error().what();
      expect_same_points(got->points, before[i]);
    }
  };
  check();

  // Rows move into chunks a batch per seal, and read the same afterwards.
  auto moved = seal_legacy_samples(db, 10'000);
  ASSERT_TRUE(moved) << moved.error().what();
  EXPECT_EQ(*moved, 10'000);
  EXPECT_EQ(count_raw_samples(db).value(), static_cast<std::int64_t>(samples.size()));
  check();
  for (;;) {
    auto more = seal_legacy_samples(db, 10'000);
    ASSERT_TRUE(more);
    if (*more == 0) break;
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM samples"), 0);
  check();
}

TEST(StoreSealed, WritersSealMovesOlderRowsToo) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  write_legacy_rows(db, {{kHour0, 0u, "gpu_temperature", 50}, {kHour0, 1u, "gpu_temperature", 51}});
  SampleWriter w(db);
  for (int i = 1; i <= static_cast<int>(kSealPoints); ++i) {
    ASSERT_TRUE(w.append("gpu_temperature", 0u, kHour0 + i * kNsPerSec, 52));
  }
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM samples"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 2);
  EXPECT_EQ(count_raw_samples(db).value(), static_cast<std::int64_t>(kSealPoints) + 2);
}

TEST(StoreSealed, PruneDropsWholeSealsOnlyOnceRolledUp) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  const TimeNs now = kHour0 + 10 * kDayNs;
  {
    SampleWriter w(db);
    for (int i = 0; i < static_cast<int>(kSealPoints); ++i) {
      ASSERT_TRUE(w.append("gpu_temperature", 0u, kHour0 + i * kNsPerSec, i));
    }
    ASSERT_TRUE(w.flush());
  }
  ASSERT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 1);
  auto early = prune(db, now);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->raw, 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_chunks"), 1);
  ASSERT_TRUE(roll_up(db, now));
  auto pruned = prune(db, now);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->raw, static_cast<std::int64_t>(kSealPoints));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_chunks"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 0);
  testing::copy_minute_rows(db);
  EXPECT_EQ(scalar(db, "SELECT sum(count) FROM minute_rows"),
            static_cast<std::int64_t>(kSealPoints));
}

TEST(StoreSealed, DamagedChunkIsAnErrorNotACrash) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  write_through_writer(db, realistic_samples());
  ASSERT_TRUE(db.exec("UPDATE sample_chunks SET data = substr(data, 1, length(data) / 2)"));
  auto h = history(db, {"gpu_temperature", 0u, kHour0, kHour0 + kHourNs, kNsPerSec});
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().what().find("corrupt"), std::string::npos) << h.error().what();
}

}  // namespace
}  // namespace cardiac::store
