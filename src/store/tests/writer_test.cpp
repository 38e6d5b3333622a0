// SPDX-License-Identifier: Apache-2.0
// Tests for SampleWriter: rows per snapshot, batching, durability and visibility.
#include "store/writer.h"

#include <gtest/gtest.h>

#include <map>

#include <algorithm>
#include <set>

#include "store/schema.h"
#include "store/tests/support.h"

namespace cardiac::store {
namespace {

using testing::scalar;
using testing::TempDir;

constexpr TimeNs kWriterT0 = 1'700'000'000LL * kNsPerSec;
constexpr int kPresentFieldsPerGpu = 29;  // fields set by testing::healthy_gpu()

nvml::GpuSnapshot eight_gpus() {
  nvml::GpuSnapshot s;
  s.available = true;
  for (unsigned i = 0; i < 8; ++i) s.gpus.push_back(testing::healthy_gpu(i));
  return s;
}

host::HostSnapshot host_at(std::uint64_t busy_ticks, std::uint64_t idle_ticks) {
  host::HostSnapshot h;
  host::CpuStat cpu;
  cpu.total.user = busy_ticks;
  cpu.total.idle = idle_ticks;
  cpu.total.iowait = 10;
  cpu.total.columns = 8;
  h.cpu = cpu;
  host::MemInfo m;
  m.total = 1000;
  m.available = 600;
  m.swap_total = 100;
  m.swap_free = 40;
  h.memory = m;
  h.load = host::LoadAvg{2.5, 1, 0.5, 3, 100};
  return h;
}

double value_of(const Db& db, const std::string& metric, std::optional<unsigned> gpu) {
  for (const auto& r : testing::raw_rows(db)) {
    if (r.metric == metric && r.gpu == (gpu ? std::optional<std::int64_t>(*gpu) : std::nullopt)) {
      return r.value;
    }
  }
  ADD_FAILURE() << "no sample of " << metric;
  return -1;
}

// Raw samples matching `pred`, wherever they are stored.
template <class Pred>
std::int64_t count_rows(const Db& db, Pred pred) {
  const auto rows = testing::raw_rows(db);
  return std::count_if(rows.begin(), rows.end(), pred);
}
std::int64_t count_rows(const Db& db) {
  return count_rows(db, [](const testing::RawRow&) { return true; });
}

TEST(StoreWriter, EightGpuSnapshotRoundTrip) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  ASSERT_TRUE(w.add(eight_gpus(), host_at(100, 900), kWriterT0));
  EXPECT_EQ(w.pending(), std::size_t{8 * kPresentFieldsPerGpu + 3});  // no CPU % on first add
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(w.pending(), 0u);

  EXPECT_EQ(count_rows(db, [](const auto& r) { return r.gpu.has_value(); }),
            8 * kPresentFieldsPerGpu);
  std::set<std::int64_t> gpus;
  for (const auto& r : testing::raw_rows(db)) {
    if (r.gpu) gpus.insert(*r.gpu);
  }
  EXPECT_EQ(gpus.size(), 8u);
  EXPECT_EQ(count_rows(db, [](const auto& r) { return r.gpu == 5; }), kPresentFieldsPerGpu);
  EXPECT_DOUBLE_EQ(value_of(db, "gpu_temperature", 3u), 63);
  EXPECT_DOUBLE_EQ(value_of(db, "gpu_mig_mode", 0u), 0);  // false is a value, not absent
  EXPECT_DOUBLE_EQ(value_of(db, "gpu_memory_total", 7u), 85'520'809'984.0);
  // Absent fields leave no row, not a zero.
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM metrics WHERE name = 'gpu_fan_speed'"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM metrics WHERE name = 'gpu_retired_pages_sbe'"), 0);
  EXPECT_EQ(count_rows(db, [](const auto& r) { return r.time != kWriterT0; }), 0);
  EXPECT_DOUBLE_EQ(value_of(db, std::string(kHostMemAvailable), std::nullopt), 600);
  EXPECT_DOUBLE_EQ(value_of(db, std::string(kHostSwapUsed), std::nullopt), 60);
  EXPECT_DOUBLE_EQ(value_of(db, std::string(kHostLoad1), std::nullopt), 2.5);
}

TEST(StoreWriter, CpuPercentFromSecondHostSnapshot) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  ASSERT_TRUE(w.add_host(host_at(100, 900), kWriterT0));
  ASSERT_TRUE(w.add_host(host_at(175, 925), kWriterT0 + kNsPerSec));  // 75 busy of 100 ticks
  ASSERT_TRUE(w.flush());
  EXPECT_DOUBLE_EQ(value_of(db, std::string(kHostCpuBusy), std::nullopt), 75);
  EXPECT_DOUBLE_EQ(value_of(db, std::string(kHostCpuIowait), std::nullopt), 0);
}

TEST(StoreWriter, UnavailableSnapshotWritesNoGpuRows) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  nvml::GpuSnapshot s;
  s.available = false;
  ASSERT_TRUE(w.add_gpus(s, kWriterT0));
  EXPECT_EQ(w.pending(), 0u);
}

TEST(StoreWriter, BatchIsWrittenOnlyOnFlush) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db, 1000);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(w.append("m", 0u, kWriterT0 + i, i));
  EXPECT_EQ(count_rows(db), 0);
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(count_rows(db), 10);
  ASSERT_TRUE(w.flush());  // nothing pending: no-op
  EXPECT_EQ(count_rows(db), 10);
}

TEST(StoreWriter, FullBatchFlushesItself) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db, 4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(w.append("m", 0u, kWriterT0 + i, i));
  EXPECT_EQ(count_rows(db), 0);
  ASSERT_TRUE(w.append("m", 0u, kWriterT0 + 3, 3));
  EXPECT_EQ(count_rows(db), 4);
  EXPECT_EQ(w.pending(), 0u);
}

// The writer keeps its grouping of a batch between flushes: a series that misses a flush and comes
// back, and one that is new, are stored whole, each point once.
TEST(StoreWriter, SeriesThatComeAndGoBetweenFlushesAreStoredWhole) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db, 1000);
  ASSERT_TRUE(w.append("a", 0u, kWriterT0, 1));
  ASSERT_TRUE(w.append("b", 0u, kWriterT0, 10));
  ASSERT_TRUE(w.flush());
  ASSERT_TRUE(w.append("a", 0u, kWriterT0 + 1, 2));  // b misses this flush
  ASSERT_TRUE(w.append("c", std::nullopt, kWriterT0 + 1, 100));
  ASSERT_TRUE(w.flush());
  ASSERT_TRUE(w.append("b", 0u, kWriterT0 + 2, 11));
  ASSERT_TRUE(w.append("a", 0u, kWriterT0 + 2, 3));
  ASSERT_TRUE(w.flush());
  std::map<std::string, std::vector<double>> got;
  for (const auto& r : testing::raw_rows(db)) got[r.metric].push_back(r.value);
  EXPECT_EQ(got["a"], (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(got["b"], (std::vector<double>{10, 11}));
  EXPECT_EQ(got["c"], (std::vector<double>{100}));
  EXPECT_EQ(got.size(), 3U);
}

TEST(StoreWriter, SecondConnectionSeesCommittedRowsOnly) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  ASSERT_TRUE(w.add_gpus(eight_gpus(), kWriterT0));
  ASSERT_TRUE(w.flush());
  ASSERT_TRUE(w.add_gpus(eight_gpus(), kWriterT0 + kNsPerSec));  // pending, never flushed

  // As if the agent had died here: a new connection (another process) reads the file.
  auto reader = open_store(dir.file("cardiac.db"));
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(count_rows(*reader), 8 * kPresentFieldsPerGpu);
  EXPECT_EQ(count_rows(*reader, [](const auto& r) { return r.time > kWriterT0; }), 0);
  auto ok = reader->query_text("PRAGMA integrity_check");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->value_or(""), "ok");
}

TEST(StoreWriter, TenThousandRowsInOneFlush) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  SampleWriter w(db, 20'000);
  double sum = 0;
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(w.append(i % 2 == 0 ? "a" : "b", static_cast<unsigned>(i % 8), kWriterT0 + i, i));
    sum += i;
  }
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(count_rows(db), 10'000);
  double stored = 0;
  for (const auto& r : testing::raw_rows(db)) stored += r.value;
  EXPECT_EQ(stored, sum);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM metrics"), 2);
  EXPECT_EQ(db.query_text("PRAGMA integrity_check").value().value_or(""), "ok");
}

}  // namespace
}  // namespace cardiac::store
