// SPDX-License-Identifier: Apache-2.0
// History store benchmarks: SampleWriter ingest into a WAL SQLite file in /tmp, and the disk
// cost of one GPU's raw 1 s samples.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvml/gpu.h"
#include "store/schema.h"
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
// flush. Every GPU reports the fields the fake's healthy H100 scenario has (44 of 48).
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
  for (auto _ : state) {
    BENCH_CHECK(state, w.add_gpus(snap, kStart + sec * kSec));
    BENCH_CHECK(state, w.flush());
    ++sec;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(8 * fields));
  state.counters["rows_per_sample"] = static_cast<double>(8 * fields);
}
BENCHMARK(BM_StoreIngestGpuSnapshot)->Unit(benchmark::kMicrosecond);

// Disk cost: one hour of 1 s samples of one GPU through SampleWriter::add_gpus, flushed every
// 5 samples (the agent's default flush_interval of 5 s), then a truncating checkpoint; raw
// `samples` rows only (no host rows, no roll-ups). Counters: bytes per row, and MB (10^6) per
// GPU-day for this field count and scaled to 29 and 48 rows per sample.
void BM_StoreBytesPerGpuDay(benchmark::State& state) {
  const auto dev = h100_device();
  for (auto _ : state) {
    TempStore ts;
    const auto empty = ts.bytes();
    store::SampleWriter w(*ts.db);
    std::size_t fields = 0;
    for (std::int64_t sec = 0; sec < 3600; ++sec) {
      nvml::GpuSnapshot snap;
      snap.available = true;
      snap.gpus.push_back(simulated_reading(dev, 0, sec));
      fields = present_fields(snap.gpus[0]);
      BENCH_CHECK(state, w.add_gpus(snap, kStart + sec * kSec));
      if (sec % 5 == 4) BENCH_CHECK(state, w.flush());
    }
    BENCH_CHECK(state, w.flush());
    const auto bytes = ts.bytes() - empty;
    const double rows = 3600.0 * static_cast<double>(fields);
    const double per_row = static_cast<double>(bytes) / rows;
    state.counters["rows_per_sample"] = static_cast<double>(fields);
    state.counters["bytes_per_row"] = per_row;
    state.counters["MB_per_gpu_day"] = static_cast<double>(bytes) * 24 / 1e6;
    state.counters["MB_per_gpu_day_29f"] = per_row * 29 * 86400 / 1e6;
    state.counters["MB_per_gpu_day_48f"] = per_row * 48 * 86400 / 1e6;
  }
}
BENCHMARK(BM_StoreBytesPerGpuDay)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
