// SPDX-License-Identifier: Apache-2.0
// History store benchmarks: SampleWriter ingest into a WAL SQLite file in /tmp, the disk cost
// of one GPU's 1 s samples, bytes written per day for 8 GPUs, and a week's query.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloc_count.h"
#include "nvml/gpu.h"
#include "store/query.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "store/writer.h"

namespace {

using cardiac::TimeNs;
namespace store = cardiac::store;
namespace nvml = cardiac::nvml;

constexpr TimeNs kSec = 1'000'000'000;
constexpr TimeNs kStart = 1'780'000'000 * kSec;  // a fixed wall-clock start

// A fresh store in a new /tmp directory, removed with the object.
struct TempStore {
  std::string dir;
  std::string path;
  std::optional<store::Db> db;
  TempStore() {
    char tmpl[] = "/tmp/cardiac-store-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/history.db";
    auto d = store::open_store(path);
    if (!d) {
      std::fprintf(stderr, "open_store: %s\n", d.error().what().c_str());
      std::abort();
    }
    db.emplace(std::move(*d));
  }
  ~TempStore() {
    db.reset();
    std::filesystem::remove_all(dir);
  }
  // Main file plus WAL, after a truncating checkpoint (so the main file holds every page).
  std::uintmax_t bytes() {
    (void)db->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    std::uintmax_t n = std::filesystem::file_size(path);
    std::error_code ec;
    auto wal = std::filesystem::file_size(path + "-wal", ec);
    return ec ? n : n + wal;
  }
};

#define BENCH_CHECK(state, expr)                         \
  do {                                                   \
    auto st_ = (expr);                                   \
    if (!st_) {                                          \
      (state).SkipWithError(st_.error().what().c_str()); \
      return;                                            \
    }                                                    \
  } while (0)

// 29 metric names, like the 29 fields per sample used for the H100 estimate.
std::vector<std::string> metric_names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("gpu_bench_field_" + std::to_string(i));
  return v;
}

// Rows per flush = range(0): each iteration appends that many rows (8 GPUs × 29 metrics,
// round robin, one time step per 232 rows; integral values that vary a little like real
// readings) and the writer flushes them in one transaction when the batch is full.
void BM_StoreIngest(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0));
  TempStore ts;
  store::SampleWriter w(*ts.db, rows);
  auto names = metric_names(29);
  for (const auto& n : names) BENCH_CHECK(state, w.metric_id(n));
  std::size_t k = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < rows; ++i, ++k) {
      const std::size_t field = k % 29;
      const unsigned gpu = static_cast<unsigned>((k / 29) % 8);
      const TimeNs t = kStart + static_cast<TimeNs>(k / 232) * kSec;
      const double v = static_cast<double>(1000 + field * 37 + (k * 7919) % 23);
      BENCH_CHECK(state, w.append(names[field], gpu, t, v));
    }
    if (w.pending() != 0) {  // not expected: the writer flushes at `rows`
      state.SkipWithError("writer did not flush at max_batch");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows));
  state.counters["rows_in_db"] = static_cast<double>(k);
}
BENCHMARK(BM_StoreIngest)->Arg(232)->Arg(8192)->Unit(benchmark::kMicrosecond);

// The agent's path for one 8-GPU sample: add_gpus (snapshot → rows by field position) and a
// flush. Every GPU reports the fields the fake's healthy H100 scenario has (48 of 53).
nlohmann::json h100_device() {
  std::ifstream in(std::string(CARDIAC_SOURCE_DIR) +
                   "/tests/fixtures/scenarios/healthy-8xh100.json");
  return nlohmann::json::parse(in)["devices"][0];
}

// Fills the scalar fields present in the scenario's device, with small per-second variation
// on the readings that move (temperature, power, clocks, utilisation, memory, energy, PCIe).
nvml::GpuReading simulated_reading(const nlohmann::json& dev, unsigned index, std::int64_t sec) {
  nvml::GpuReading g;
  g.index = index;
  const auto wobble = [&](const char* name, double v) {
    static const char* moving[] = {"utilization_gpu", "utilization_memory", "memory_used",
                                   "memory_free",     "temperature",        "power_usage_mw",
                                   "clock_sm_mhz",    "clock_graphics_mhz", "pcie_tx_kb_per_s",
                                   "pcie_rx_kb_per_s"};
    const std::string n = name;
    if (n == "energy_mj") return v + static_cast<double>(sec) * 650'000.0;  // ~650 W
    for (auto* m : moving) {
      if (n == m) {
        const auto h = static_cast<double>((sec * 2654435761LL + index * 97) % 9) - 4;  // -4..4
        if (n == "power_usage_mw") return v + h * 3000;
        if (n == "memory_used" || n == "memory_free") return v + h * 2097152;
        if (n == "pcie_tx_kb_per_s" || n == "pcie_rx_kb_per_s") return v + h * 1000;
        return v + h;
      }
    }
    return v;
  };
#define CARDIAC_GPU_FIELD(member, ...)                                      \
  if (dev.contains(#member) && dev[#member].is_number()) {                  \
    using T = std::remove_cvref_t<decltype(*g.member)>;                     \
    g.member = static_cast<T>(wobble(#member, dev[#member].get<double>())); \
  } else if (dev.contains(#member) && dev[#member].is_boolean()) {          \
    using T = std::remove_cvref_t<decltype(*g.member)>;                     \
    g.member = static_cast<T>(dev[#member].get<bool>());                    \
  }
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  return g;
}

std::size_t present_fields(const nvml::GpuReading& g) {
  std::size_t n = 0;
#define CARDIAC_GPU_FIELD(member, ...) n += g.member.has_value() ? 1 : 0;
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  return n;
}

void BM_StoreIngestGpuSnapshot(benchmark::State& state) {
  TempStore ts;
  store::SampleWriter w(*ts.db);
  const auto dev = h100_device();
  nvml::GpuSnapshot snap;
  snap.available = true;
  for (unsigned i = 0; i < 8; ++i) snap.gpus.push_back(simulated_reading(dev, i, 0));
  const auto fields = present_fields(snap.gpus[0]);
  std::int64_t sec = 0;
  const std::uint64_t allocs_before = cardiac::bench::allocations();
  for (auto _ : state) {
    BENCH_CHECK(state, w.add_gpus(snap, kStart + sec * kSec));
    BENCH_CHECK(state, w.flush());
    ++sec;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(8 * fields));
  state.counters["rows_per_sample"] = static_cast<double>(8 * fields);
  // operator new calls per sample, SQLite's own mallocs not counted.
  state.counters["allocs"] =
      benchmark::Counter(static_cast<double>(cardiac::bench::allocations() - allocs_before),
                         benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_StoreIngestGpuSnapshot)->Unit(benchmark::kMicrosecond);

// The layout before compressed samples: one `samples` row per reading, inserted one prepared
// statement per row in one transaction per flush, as SampleWriter did then. Kept here so the
// bench shows both layouts from the same data.
class RowWriter {
 public:
  explicit RowWriter(store::Db& db) : db_(db) {}
  cardiac::Status add_gpus(const nvml::GpuSnapshot& snap, TimeNs at) {
    for (const auto& g : snap.gpus) {
#define CARDIAC_GPU_FIELD(member, ...)                                   \
  if (g.member) {                                                        \
    auto id = ids_.metric_id("gpu_" #member);                            \
    if (!id) return cardiac::fail(id.error());                           \
    rows_.push_back({at, g.index, *id, static_cast<double>(*g.member)}); \
  }
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
    }
    return {};
  }
  cardiac::Status append(std::string_view metric, std::optional<unsigned> gpu, TimeNs at,
                         double value) {
    auto id = ids_.metric_id(metric);
    if (!id) return cardiac::fail(id.error());
    rows_.push_back({at, gpu, *id, value});
    return {};
  }
  cardiac::Status flush() {
    auto tx = store::Transaction::begin(db_);
    if (!tx) return cardiac::fail(tx.error());
    auto st = db_.prepare("INSERT INTO samples(time_ns, gpu, metric_id, value) VALUES (?,?,?,?)");
    if (!st) return cardiac::fail(st.error());
    for (const auto& r : rows_)
      CARDIAC_TRY(st->bind_all(r.time_ns, r.gpu, r.metric_id, r.value).run());
    CARDIAC_TRY(tx->commit());
    rows_.clear();
    return {};
  }

 private:
  store::Db& db_;
  store::SampleWriter ids_{db_};  // only for metric ids
  std::vector<store::SampleRow> rows_;
};

// Sampling instants: exact seconds, or (jitter) the agent's clock read a little after each tick
// (0-1 ms late, as a woken thread reads it), so the time column costs what it would in the field.
TimeNs instant(std::int64_t sec, bool jitter) {
  const TimeNs late = jitter ? static_cast<TimeNs>((sec * 2654435761LL) % 1'000'000) : 0;
  return kStart + sec * kSec + late;
}

nvml::GpuSnapshot simulated_snapshot(const nlohmann::json& dev, unsigned gpus, std::int64_t sec) {
  nvml::GpuSnapshot snap;
  snap.available = true;
  for (unsigned i = 0; i < gpus; ++i) snap.gpus.push_back(simulated_reading(dev, i, sec));
  return snap;
}

// The same samples as OpenMetrics text, one family after another (OpenMetrics forbids
// interleaving them), timestamps in seconds: what `promtool tsdb create-blocks-from
// openmetrics` turns into Prometheus' own blocks (bench/store_vs_prometheus.sh).
class OpenMetricsDump {
 public:
  void add(const nvml::GpuReading& g, TimeNs at) {
#define CARDIAC_GPU_FIELD(member, ...) \
  if (g.member) series_["gpu_" #member].emplace_back(at, static_cast<double>(*g.member));
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  }
  bool write(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return false;
    for (const auto& [name, points] : series_) {
      std::fprintf(f, "# TYPE cardiac_bench_%s gauge\n", name.c_str());
      for (const auto& [at, v] : points) {
        std::fprintf(f, "cardiac_bench_%s{gpu=\"0\"} %.17g %lld.%09lld\n", name.c_str(), v,
                     static_cast<long long>(at / kSec), static_cast<long long>(at % kSec));
      }
    }
    std::fprintf(f, "# EOF\n");
    return std::fclose(f) == 0;
  }

 private:
  std::map<std::string, std::vector<std::pair<TimeNs, double>>> series_;
};

// Disk cost per sample: one hour of 1 s samples of one simulated H100 (44 fields) through
// SampleWriter::add_gpus, flushed every 5 samples (the agent's default flush_interval of 5 s),
// the tail sealed at the end, then a truncating checkpoint. Samples only (no host rows, no
// roll-ups). range(0): 1 = jittered instants. Counters: bytes per sample of file growth and of
// blob payload, the same data as `samples` rows (the layout before chunks), and MB (10^6) per
// GPU-day.
void BM_StoreBytesPerGpuDay(benchmark::State& state) {
  const auto dev = h100_device();
  const bool jitter = state.range(0) != 0;
  // CARDIAC_BENCH_OPENMETRICS=FILE also writes the unjittered run's samples there.
  const char* dump_path = std::getenv("CARDIAC_BENCH_OPENMETRICS");
  for (auto _ : state) {
    std::optional<OpenMetricsDump> dump;
    if (dump_path != nullptr && !jitter) dump.emplace();
    TempStore sealed;
    TempStore rows;
    const auto sealed_empty = sealed.bytes();
    const auto rows_empty = rows.bytes();
    std::size_t fields = 0;
    {
      store::SampleWriter w(*sealed.db);
      RowWriter r(*rows.db);
      for (std::int64_t sec = 0; sec < 3600; ++sec) {
        const auto snap = simulated_snapshot(dev, 1, sec);
        fields = present_fields(snap.gpus[0]);
        BENCH_CHECK(state, w.add_gpus(snap, instant(sec, jitter)));
        BENCH_CHECK(state, r.add_gpus(snap, instant(sec, jitter)));
        if (dump) dump->add(snap.gpus[0], instant(sec, jitter));
        if (sec % 5 == 4) {
          BENCH_CHECK(state, w.flush());
          BENCH_CHECK(state, r.flush());
        }
      }
      BENCH_CHECK(state, w.flush());
      BENCH_CHECK(state, r.flush());
    }
    BENCH_CHECK(state, store::seal_tail(*sealed.db));
    if (dump && !dump->write(dump_path)) {
      state.SkipWithError("cannot write CARDIAC_BENCH_OPENMETRICS");
      return;
    }
    const double samples = 3600.0 * static_cast<double>(fields);
    const auto payload = sealed.db->query_int64(
        "SELECT (SELECT total(length(data)) FROM sample_chunks) + "
        "(SELECT total(length(times)) FROM sample_seals)");
    const double per_sample = static_cast<double>(sealed.bytes() - sealed_empty) / samples;
    const double per_row = static_cast<double>(rows.bytes() - rows_empty) / samples;
    state.counters["samples_per_instant"] = static_cast<double>(fields);
    state.counters["bytes_per_sample"] = per_sample;
    state.counters["payload_bytes_per_sample"] =
        payload && *payload ? static_cast<double>(**payload) / samples : -1;
    state.counters["rows_bytes_per_sample"] = per_row;
    state.counters["MB_per_gpu_day"] = per_sample * samples * 24 / 1e6;
    state.counters["rows_MB_per_gpu_day"] = per_row * samples * 24 / 1e6;
  }
}
BENCHMARK(BM_StoreBytesPerGpuDay)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

// Bytes this process has passed to write(2)/pwrite(2) so far (/proc/self/io wchar): the WAL
// frames, the checkpoints into the main file, everything SQLite writes (the -shm is mmapped
// and not counted; neither is the file system's own journal).
std::int64_t written_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::int64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return -1;
}

constexpr std::int64_t kRollupLate = 120;  // store::kRollupLateness in seconds

// Disk writes: one simulated hour of 8 GPUs × 44 fields at 1 s (jittered instants), through
// SampleWriter (tail rows and seals) and, for comparison, as `samples` rows. range(0) = N > 0
// also runs roll_up() every N simulated minutes up to store::rollup_horizon() as the agent's
// maintenance thread does (it wakes every 10 minutes, kRollupPeriod), and after the hour the
// run that rolls up its last clock hour, so each minute of the hour is rolled up once, with the
// agent's checkpoints of the WAL (after the first run and after each that rolls a new hour up);
// range(1) = F flushes every F seconds (the agent's store.flush_interval); range(2) = 1 adds the
// agent's five host series, read every 5 s at instants of their own between the GPUs' (so each GPU
// series skips one instant of the seal's time column every 5 s). Counters: MB (10^6) written per
// day (the hour × 24) for each layout.
void BM_StoreWritesPerDay(benchmark::State& state) {
  const auto dev = h100_device();
  const std::int64_t every = state.range(0) * 60;   // seconds between roll_up() calls; 0: none
  const std::int64_t flush_every = state.range(1);  // seconds between flushes
  const bool with_host = state.range(2) != 0;
  // The host series as the agent writes them every 5 s, 41 ms after that second's GPU reading.
  const auto add_host = [](auto& writer, std::int64_t sec) -> cardiac::Status {
    const TimeNs at = instant(sec, true) + 41'000'000;
    const auto wobble = static_cast<double>((sec * 2654435761LL) % 7);
    CARDIAC_TRY(writer.append("host_cpu_busy_percent", std::nullopt, at, 12.5 + wobble * 0.37));
    CARDIAC_TRY(writer.append("host_cpu_iowait_percent", std::nullopt, at, 0.1 * wobble));
    CARDIAC_TRY(writer.append("host_memory_available_bytes", std::nullopt, at,
                              2.0e11 - wobble * 4096 * 1024));
    CARDIAC_TRY(writer.append("host_swap_used_bytes", std::nullopt, at, 0));
    return writer.append("host_load1", std::nullopt, at, 3.2 + wobble * 0.01);
  };
  // As the agent's maintenance thread does: after the first run and each run whose horizon
  // moved to a new hour.
  struct Checkpointed {
    bool any = false;
    TimeNs at = 0;
  } checkpointed;
  const auto checkpoint = [&checkpointed](store::Db& db, store::RollupHorizon h) {
    if (checkpointed.any && checkpointed.at == h.minutes) return cardiac::Status{};
    checkpointed = {true, h.minutes};
    return db.exec("PRAGMA wal_checkpoint(PASSIVE)");
  };
  // As the agent's maintenance thread calls it: up to the last whole hour, 2 minutes late.
  const auto rollup_at = [](std::int64_t sec) { return store::rollup_horizon(instant(sec, true)); };
  const auto roll = [](store::Db& db, store::RollupHorizon h) {
    return store::roll_up(db, h.minutes, h.hours);
  };
  // After the hour, the run that rolls up its last clock hour (each clock hour once in all).
  const auto last_rollup = rollup_at(3600 + kRollupLate);
  for (auto _ : state) {
    std::int64_t sealed_bytes = 0;
    std::int64_t rows_bytes = 0;
    {
      checkpointed = {};
      TempStore ts;
      store::SampleWriter w(*ts.db);
      const auto before = written_bytes();
      for (std::int64_t sec = 0; sec < 3600; ++sec) {
        BENCH_CHECK(state, w.add_gpus(simulated_snapshot(dev, 8, sec), instant(sec, true)));
        if (with_host && sec % 5 == 0) BENCH_CHECK(state, add_host(w, sec));
        if (sec % flush_every == flush_every - 1) BENCH_CHECK(state, w.flush());
        if (every > 0 && sec % every == every - 1) {
          BENCH_CHECK(state, roll(*ts.db, rollup_at(sec)));
          BENCH_CHECK(state, checkpoint(*ts.db, rollup_at(sec)));
        }
      }
      BENCH_CHECK(state, w.flush());
      if (every > 0) {
        BENCH_CHECK(state, roll(*ts.db, last_rollup));
        BENCH_CHECK(state, checkpoint(*ts.db, last_rollup));
      }
      sealed_bytes = written_bytes() - before;
    }
    {
      checkpointed = {};
      TempStore ts;
      RowWriter r(*ts.db);
      const auto before = written_bytes();
      for (std::int64_t sec = 0; sec < 3600; ++sec) {
        BENCH_CHECK(state, r.add_gpus(simulated_snapshot(dev, 8, sec), instant(sec, true)));
        if (with_host && sec % 5 == 0) BENCH_CHECK(state, add_host(r, sec));
        if (sec % flush_every == flush_every - 1) BENCH_CHECK(state, r.flush());
        if (every > 0 && sec % every == every - 1) {
          BENCH_CHECK(state, roll(*ts.db, rollup_at(sec)));
          BENCH_CHECK(state, checkpoint(*ts.db, rollup_at(sec)));
        }
      }
      BENCH_CHECK(state, r.flush());
      if (every > 0) {
        BENCH_CHECK(state, roll(*ts.db, last_rollup));
        BENCH_CHECK(state, checkpoint(*ts.db, last_rollup));
      }
      rows_bytes = written_bytes() - before;
    }
    state.counters["MB_written_per_day"] = static_cast<double>(sealed_bytes) * 24 / 1e6;
    state.counters["rows_MB_written_per_day"] = static_cast<double>(rows_bytes) * 24 / 1e6;
  }
}
BENCHMARK(BM_StoreWritesPerDay)
    ->Args({0, 5, 0})
    ->Args({1, 5, 0})
    ->Args({10, 5, 0})
    ->Args({0, 10, 0})
    ->Args({10, 10, 0})
    ->Args({0, 5, 1})
    ->Args({10, 5, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// A week of one metric of one GPU: range(0) = the step in seconds, 59 (the coarsest step still
// read from raw samples: every chunk of the series decoded) or 3600 (hour roll-ups, plus minutes
// and raw samples for the part not rolled up yet), from a store holding 7 days of 8 GPUs × 4
// metrics at 1 s (jittered): 1007 seals, each decoded for its time column and this series' chunk,
// plus a tail of 595 s written in 5 s flushes (119 records, decoded whole), rolled up as the
// agent does (store::rollup_horizon(): minutes to the last whole hour, hours to the last day).
// Setup (about 19 M samples) runs once per step.
void BM_StoreQueryWeek(benchmark::State& state) {
  TempStore ts;
  constexpr std::int64_t kWeek = 7 * 86'400;
  {
    store::SampleWriter w(*ts.db, 1 << 20);
    const char* metrics[] = {"gpu_temperature", "gpu_power_usage_mw", "gpu_utilization_gpu",
                             "gpu_memory_used"};
    for (std::int64_t sec = 0; sec < kWeek - 5; ++sec) {
      for (unsigned g = 0; g < 8; ++g) {
        const double h = static_cast<double>((sec * 2654435761LL + g * 97) % 9) - 4;
        const double values[] = {60 + h, 650'000 + h * 3000, 97 + h, 7e10 + h * 2097152};
        for (int m = 0; m < 4; ++m) {
          BENCH_CHECK(state, w.append(metrics[m], g, instant(sec, true), values[m]));
        }
      }
      // Big batches seal at once while building the week; the last 10 minutes as the agent.
      const bool late = sec >= kWeek - 600;
      if (late ? sec % 5 == 4 : sec % 600 == 599) BENCH_CHECK(state, w.flush());
    }
    BENCH_CHECK(state, w.flush());
  }
  // The maintenance thread's roll-ups: minutes to the last whole hour, hours to the last day.
  const auto horizon = store::rollup_horizon(instant(kWeek - 5, true));
  BENCH_CHECK(state, store::roll_up(*ts.db, horizon.minutes, horizon.hours));
  const store::HistoryQuery q{"gpu_power_usage_mw", 3u, kStart, kStart + kWeek * kSec,
                              state.range(0) * kSec};
  // Answered on a connection of its own, as the agent's API reader (store::query_options()).
  auto reader = store::Db::open(ts.path, store::query_options());
  if (!reader) {
    state.SkipWithError(reader.error().what().c_str());
    return;
  }
  std::size_t points = 0;
  for (auto _ : state) {
    auto h = store::history(*reader, q);
    if (!h) {
      state.SkipWithError(h.error().what().c_str());
      return;
    }
    points = h->points.size();
    benchmark::DoNotOptimize(points);
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["seals"] =
      static_cast<double>(ts.db->query_int64("SELECT count(*) FROM sample_seals")->value_or(0));
  auto log = store::live_tail_records(*ts.db);
  state.counters["tail_records"] = log ? static_cast<double>(log->records.size()) : -1.0;
}
BENCHMARK(BM_StoreQueryWeek)->Arg(59)->Arg(3600)->Unit(benchmark::kMillisecond);

// A roll-up's read of one hour of 8 GPUs (for_each_series, as roll_minutes runs it) whose last
// nine minutes are still in the tail, the most a roll-up reads from it: 51 minutes from the
// seals' chunks, 540 s of 357 series decoded from the tail files. Counters: series visited,
// points, allocations (operator new) per walk.
void BM_StoreWalkHour(benchmark::State& state) {
  TempStore ts;
  store::SampleWriter w(*ts.db);
  const auto dev = h100_device();
  // From 9 minutes before the hour: seals at seconds 59, 659 ... 3059, the tail after that.
  for (std::int64_t sec = -540; sec < 3600; ++sec) {
    BENCH_CHECK(state, w.add_gpus(simulated_snapshot(dev, 8, sec), instant(sec, true)));
    BENCH_CHECK(state, w.flush());
  }
  std::int64_t series = 0;
  std::int64_t points = 0;
  const std::uint64_t allocs_before = cardiac::bench::allocations();
  for (auto _ : state) {
    series = 0;
    points = 0;
    auto walked =
        store::for_each_series(*ts.db, instant(0, false), instant(3600, false),
                               [&](const store::SeriesKey&, const std::vector<store::Point>& p) {
                                 ++series;
                                 points += static_cast<std::int64_t>(p.size());
                                 return cardiac::Status{};
                               });
    BENCH_CHECK(state, walked);
  }
  state.counters["series"] = static_cast<double>(series);
  state.counters["points"] = static_cast<double>(points);
  state.counters["allocs"] =
      benchmark::Counter(static_cast<double>(cardiac::bench::allocations() - allocs_before),
                         benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_StoreWalkHour)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
