// SPDX-License-Identifier: Apache-2.0
// The metric registry: the one table that names every metric cardiac exports, its source and
// its dcgm-exporter counterpart. /metrics, the docs page and (later) the store read it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "health/report.h"
#include "host/mounts.h"
#include "host/network.h"
#include "metrics/queue_metrics.h"

namespace cardiac::metrics {

enum class MetricType { kGauge, kCounter, kHistogram };
std::string_view metric_type_name(MetricType t);  // "gauge", "counter", "histogram"

// What one series is about; it decides the labels and which getter below is set.
enum class Scope {
  kReport,      // one series per host: labels hostname
  kGpu,         // one series per GPU: gpu, uuid, pci_bus_id, model, hostname
  kClockEvent,  // per GPU and known clock event reason: + reason
  kXidCount,    // per GPU and Xid code, from ExpositionInput::xid_counts: + xid
  kFaultCount,  // per GPU and fault class (health/faults.h), ExpositionInput::fault_counts: + class
  kLastXid,     // per GPU, from ExpositionInput::last_xid
  kGpuJob,      // per GPU and job with a process on it (GpuProcess.job): + job, source
  kFilesystem,  // per data mount: hostname, mountpoint, device, fstype
  kNic,         // per network interface: hostname, interface
  kAgent,       // agent self-metrics: hostname
  kQueue,       // the job queue, one series: hostname
  kQueueState,  // per job state, from QueueMetrics::jobs_by_state: + state
  kQueueUser,   // per user, from QueueMetrics::user_gpu_seconds: + user
  kQueueWait,   // the wait histogram of QueueMetrics: hostname (+ le on buckets)
  kNodeConfig,  // the node's configuration facts, ExpositionInput::config: hostname + facts
  kGpuConfig,   // per GPU of ExpositionInput::config: the GPU labels + its facts
};

// Counters and timings of the agent itself, filled by whoever runs the sampling loop.
struct AgentMetrics {
  std::optional<double> sample_duration_seconds;  // the latest sample
  std::optional<std::uint64_t> samples_total;
  std::optional<std::uint64_t> missed_samples_total;
  std::optional<std::uint64_t> worker_restarts_total;
  std::optional<double> last_sample_timestamp_seconds;  // Unix time
  // 1 while the configured kernel log is read, 0 while it cannot be; absent when not watched.
  std::optional<double> kmsg_up;
  // The agent process's own memory (read once per sample, so a scrape of the same sample is
  // the same text).
  std::optional<double> heap_in_use_bytes;
  std::optional<double> heap_free_bytes;
  std::optional<double> sqlite_memory_bytes;

  bool operator==(const AgentMetrics&) const = default;
};

// value = raw * mul / div. Kept as two factors so that exact conversions (MHz -> Hz,
// mW -> W, bytes -> MiB) stay exact in floating point: 300000 / 1000 is 300, while
// 300000 * 0.001 is not.
struct Scale {
  double mul = 1;
  double div = 1;
  [[nodiscard]] double apply(double raw) const { return raw * mul / div; }
};

// The dcgm-exporter name of a metric, emitted next to the native one in compat mode.
struct DcgmCompat {
  std::string_view name;  // empty: no dcgm-exporter counterpart
  MetricType type = MetricType::kGauge;
  std::string_view unit;  // dcgm-exporter's unit, for the docs ("MiB", "MHz", "%")
  Scale scale;            // from the raw source value
};

// Getters return the raw source value (the unit named in `source`); absent means no series.
using ReportGetter = std::optional<double> (*)(const health::StatusReport&);
using GpuGetter = std::optional<double> (*)(const health::GpuStatus&);
using FsGetter = std::optional<double> (*)(const host::FilesystemUsage&);
using NicGetter = std::optional<double> (*)(const host::NetDevice&);
using AgentGetter = std::optional<double> (*)(const AgentMetrics&);
using QueueGetter = std::optional<double> (*)(const QueueMetrics&);

struct MetricDef {
  std::string_view name;  // native family name, "cardiac_gpu_temperature_celsius"
  MetricType type = MetricType::kGauge;
  std::string_view unit;  // base unit of the native value: "celsius", "bytes", "ratio", ""
  std::string_view help;
  Scope scope = Scope::kReport;
  std::string_view source;  // where the raw value comes from, for the docs
  Scale scale;              // raw -> native unit
  DcgmCompat dcgm;
  // Exactly the getter matching `scope` is set; kClockEvent, kXidCount, kLastXid and the
  // labelled queue scopes are computed by the renderer from the reason table, the Xid maps
  // and QueueMetrics.
  ReportGetter report = nullptr;
  GpuGetter gpu = nullptr;
  FsGetter fs = nullptr;
  NicGetter nic = nullptr;
  AgentGetter agent = nullptr;
  QueueGetter queue = nullptr;
};

// Every metric, in a fixed order (the docs order; /metrics sorts by name).
const std::vector<MetricDef>& metric_registry();

// Label names of a scope's native series, in output order.
std::vector<std::string_view> native_labels(Scope s);
// Label names of dcgm-exporter compat series (GPU scopes only), in output order.
std::vector<std::string_view> dcgm_labels();

// A Markdown page listing every registry entry (for docs/metrics.md).
std::string metrics_reference_markdown();

}  // namespace cardiac::metrics
