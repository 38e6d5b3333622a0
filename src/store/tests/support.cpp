// SPDX-License-Identifier: Apache-2.0
// Test helpers for the store tests.
#include "store/tests/support.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <filesystem>

#include <limits>
#include <map>

#include "store/minute_blocks.h"
#include "store/schema.h"
#include "store/sealed.h"

namespace cardiac::store::testing {

Db open_test_store(const TempDir& dir, const std::string& name) {
  auto db = open_store(dir.file(name));
  if (!db) {
    ADD_FAILURE() << db.error().what();
    std::abort();
  }
  return std::move(*db);
}

nvml::GpuReading healthy_gpu(unsigned index) {
  nvml::GpuReading g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-0000000" + std::to_string(index);
  g.pci_bus_id = "0000:" + std::to_string(10 + index) + ":00.0";
  g.pci_device_id = 0x233010de;
  g.minor_number = index;
  g.persistence_mode = true;
  g.mig_mode = false;
  g.utilization_gpu = 97;
  g.utilization_memory = 61;
  g.memory_total = 85'520'809'984ULL;
  g.memory_used = 70'000'000'000ULL;
  g.memory_free = 15'520'809'984ULL;
  g.temperature = 60 + index;
  g.temperature_slowdown = 87;
  g.temperature_shutdown = 92;
  g.power_usage_mw = 650'000;
  g.power_limit_mw = 700'000;
  g.energy_mj = 123'456'789'000ULL;
  g.clock_sm_mhz = 1980;
  g.clock_mem_mhz = 2619;
  g.clock_event_reasons = 0;
  g.pstate = 0;
  g.ecc_enabled = true;
  g.ecc_volatile_corrected = 0;
  g.ecc_volatile_uncorrected = 0;
  g.remapped_rows_corrected = 0;
  g.remapped_rows_uncorrected = 0;
  g.remapped_rows_pending = false;
  g.remapped_rows_failure = false;
  g.pcie_gen_current = 5;
  g.pcie_width_current = 16;
  g.pcie_replay_counter = 0;
  return g;
}

std::vector<RawRow> raw_rows(const Db& db) {
  std::map<std::int64_t, std::string> names;
  auto st = db.prepare("SELECT id, name FROM metrics");
  EXPECT_TRUE(st);
  while (st && st->step().value_or(false)) names[st->column_int64(0)] = st->column_text(1);
  auto all =
      read_all_series(db, std::numeric_limits<TimeNs>::min(), std::numeric_limits<TimeNs>::max());
  if (!all) {
    ADD_FAILURE() << all.error().what();
    return {};
  }
  // The roll-up reads the same samples a series at a time: every store a test reads this way
  // checks that both give the same series, points and order.
  SeriesMap visited;
  auto walked =
      for_each_series(db, std::numeric_limits<TimeNs>::min(), std::numeric_limits<TimeNs>::max(),
                      [&](const SeriesKey& key, const std::vector<Point>& points) {
                        EXPECT_TRUE(visited.empty() || visited.rbegin()->first < key);
                        visited[key] = points;
                        return Status{};
                      });
  EXPECT_TRUE(walked) << (walked ? "" : walked.error().what());
  EXPECT_EQ(visited.size(), all->size());
  for (const auto& [key, points] : *all) {
    auto it = visited.find(key);
    if (it == visited.end()) {
      ADD_FAILURE() << "for_each_series missed metric " << key.metric_id << " gpu " << key.gpu;
      continue;
    }
    EXPECT_EQ(it->second.size(), points.size());
    for (std::size_t i = 0; i < std::min(points.size(), it->second.size()); ++i) {
      EXPECT_EQ(it->second[i].time, points[i].time);
      EXPECT_EQ(std::bit_cast<std::uint64_t>(it->second[i].value),
                std::bit_cast<std::uint64_t>(points[i].value));
    }
  }
  std::vector<RawRow> out;
  for (const auto& [key, points] : *all) {
    for (const Point& p : points) {
      out.push_back({p.time, key.gpu == kHostGpu ? std::nullopt : std::optional(key.gpu),
                     names[key.metric_id], p.value});
    }
  }
  return out;
}

std::int64_t tail_records(const Db& db) {
  auto records = live_tail_records(db);
  if (!records) {
    ADD_FAILURE() << records.error().what();
    return -1;
  }
  return static_cast<std::int64_t>(records->records.size());
}

void copy_minute_rows(Db& db) {
  ASSERT_TRUE(db.exec(
      "DROP TABLE IF EXISTS temp.minute_rows; CREATE TEMP TABLE minute_rows (metric_id, gpu, "
      "bucket_ns, min, avg, max, count); INSERT INTO minute_rows SELECT metric_id, gpu, "
      "bucket_ns, min, avg, max, count FROM rollup_1m"));
  auto series = db.prepare("SELECT DISTINCT metric_id, gpu FROM rollup_1m_blocks");
  ASSERT_TRUE(series);
  std::vector<SeriesKey> keys;
  for (;;) {
    auto row = series->step();
    ASSERT_TRUE(row);
    if (!*row) break;
    keys.push_back({series->column_int64(0), series->column_int64(1)});
  }
  auto ins = db.prepare("INSERT INTO minute_rows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  ASSERT_TRUE(ins);
  for (const SeriesKey& k : keys) {
    auto buckets = read_minute_buckets(db, k, std::numeric_limits<TimeNs>::min(),
                                       std::numeric_limits<TimeNs>::max());
    ASSERT_TRUE(buckets) << buckets.error().what();
    for (const MinuteBucket& b : *buckets) {
      ASSERT_TRUE(ins->bind_all(k.metric_id, k.gpu, b.bucket, b.min, b.avg, b.max, b.count).run());
      ins->reset();
    }
  }
}

std::int64_t scalar(const Db& db, const std::string& sql) {
  auto v = db.query_int64(sql);
  if (!v) {
    ADD_FAILURE() << v.error().what();
    return -1;
  }
  return v->value_or(-1);
}

}  // namespace cardiac::store::testing
