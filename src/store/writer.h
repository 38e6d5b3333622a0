// SPDX-License-Identifier: Apache-2.0
// Turns GPU and host snapshots into sample rows and writes them in batched transactions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "host/host.h"
#include "nvml/gpu.h"
#include "store/chunk.h"
#include "store/db.h"

namespace cardiac::store {

// One pending sample.
struct SampleRow {
  TimeNs time_ns = 0;
  std::optional<unsigned> gpu;  // nullopt = host
  std::int64_t metric_id = 0;
  double value = 0;
};

// Names of the rows the writer produces: "gpu_<field>" for every field of gpu_fields.def, plus
// these host metrics (gpu NULL).
inline constexpr std::string_view kHostCpuBusy = "host_cpu_busy_percent";
inline constexpr std::string_view kHostCpuIowait = "host_cpu_iowait_percent";
inline constexpr std::string_view kHostMemAvailable = "host_memory_available_bytes";
inline constexpr std::string_view kHostSwapUsed = "host_swap_used_bytes";
inline constexpr std::string_view kHostLoad1 = "host_load1";

// Every metric name above, GPU fields first; per_gpu is false for the host metrics.
struct StoredMetric {
  std::string_view name;
  bool per_gpu = false;
};
[[nodiscard]] const std::vector<StoredMetric>& stored_metrics();

namespace detail {
// The tail records a SampleWriter has written since its last seal. Outside the class: a nested
// type with default member initializers is not default-constructible (for std::optional) while
// its enclosing class is still incomplete, which clang enforces.
struct TailSegment {
  std::int64_t id = 0;
  std::int64_t next_seq = 0;
  TailChain chain;
  std::map<SeriesKey, std::size_t> counts;
};
}  // namespace detail

// Batches samples in memory; each flush appends them as one bit-packed record (every series of
// the batch) to the tail file of the writer's open segment (tail_log.h), continuing its chain,
// so whatever a flush wrote survives a kill -9 without a database commit per flush. When a series
// of the segment would reach kSealPoints samples, that flush instead seals the tail and the batch
// into chunks (one seal) and empties the tail, in the same transaction; after a seal it also moves
// a batch of rows of the older `samples` table into chunks. The first flush of a writer seals
// whatever tail an earlier writer left (as a seal of its own). Rows of a failed flush stay in the
// batch for the next try. The Db must outlive the writer. Not thread-safe (one writer thread owns
// it); one writer per store at a time (a second one's first flush seals the first one's segment,
// which then starts another).
class SampleWriter {
 public:
  // `max_batch`: adding past this many pending rows flushes automatically.
  explicit SampleWriter(Db& db, std::size_t max_batch = 8192);

  // Appends one row per present GPU field and the host metrics, all stamped `at`. CPU
  // percentages need two host snapshots, so the first add() writes none. May flush.
  [[nodiscard]] Status add(const nvml::GpuSnapshot& gpus, const host::HostSnapshot& host,
                           TimeNs at);
  [[nodiscard]] Status add_gpus(const nvml::GpuSnapshot& gpus, TimeNs at);
  [[nodiscard]] Status add_host(const host::HostSnapshot& host, TimeNs at);
  // One row of any metric; registers the metric name on first use. May flush.
  [[nodiscard]] Status append(std::string_view metric, std::optional<unsigned> gpu, TimeNs at,
                              double value);

  // Writes every pending sample in one transaction; a no-op when nothing is pending.
  [[nodiscard]] Status flush();
  [[nodiscard]] std::size_t pending() const { return batch_.size(); }

  // The id of `name` in `metrics`, inserting it when new; cached.
  [[nodiscard]] Result<std::int64_t> metric_id(std::string_view name);

 private:
  Status push(std::int64_t metric, std::optional<unsigned> gpu, TimeNs at, double value);
  Status push_gpu_fields(const nvml::GpuReading& g, TimeNs at);

  using Segment = detail::TailSegment;
  // Groups batch_ by series into series_.
  void gather();
  Result<bool> write_batch(std::span<const SeriesPoints> batch, std::optional<Segment>& seg);

  Db& db_;
  std::size_t max_batch_;
  std::optional<Segment> segment_;
  std::vector<SampleRow> batch_;
  // Kept between flushes, so that a flush reuses their vectors and nodes rather than making a
  // map of the batch and a copy of the segment anew (two thirds of the writer's allocations).
  std::vector<SeriesPoints> series_;            // the batch by series, each with points
  std::map<SeriesKey, std::size_t> series_at_;  // where a series is in series_
  std::optional<Segment> scratch_;              // the segment as a flush changes it
  std::unordered_map<std::string, std::int64_t> ids_;
  std::vector<std::optional<std::int64_t>> gpu_field_ids_;  // by position in gpu_fields.def
  std::optional<host::CpuStat> prev_cpu_;
};

}  // namespace cardiac::store
