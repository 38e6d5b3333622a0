// SPDX-License-Identifier: Apache-2.0
// A flat, rule-friendly view of one sample: named points with labels, built from GPU and host data.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "health/faults.h"
#include "host/host.h"
#include "nvml/gpu.h"
#include "rules/labels.h"

namespace cardiac::rules {

// "gpu" points carry the labels gpu (index) and uuid; "host" points carry none, or mount / nic.
enum class Scope { kGpu, kHost };
std::string_view scope_name(Scope s);

struct Point {
  std::string metric;
  Labels labels;
  double value = 0;
};

struct SampleView {
  TimeNs at = 0;  // when the sample was taken (the caller decides which clock)
  std::vector<Point> points;
  // The label sets of the GPUs of the last build into this view, by position: a GPU that keeps
  // its index and UUID keeps its set, so the rules' series hold the same one from sample to
  // sample and its key is not made again.
  std::vector<Labels> gpu_labels;
};

// What the engine knows about a metric name: rules naming anything else are rejected, because a
// typo would otherwise look exactly like a reading that is absent today.
struct MetricInfo {
  std::string_view name;
  Scope scope;
  bool counter;  // only counters may be used by rate rules (resets are handled as counter resets)
  std::string_view help;
  // A count of events since the agent started: a series that first appears with value N grew
  // from 0 (the event that created it is part of the increase).
  bool from_zero = false;
};

const std::vector<MetricInfo>& known_metrics();
const MetricInfo* find_metric(std::string_view name);

// DCGM's expected PCIe replays per minute for one lane of generation `gen` (0 when unknown).
double pcie_replays_per_lane_per_min(unsigned gen);

// Kernel-log (and NVML event) faults counted since the agent started, by PCI bus id as
// logged. Their points carry the labels gpu and uuid of the GPU on that bus in this sample,
// plus pci_bus_id; a bus no GPU of the sample answers on gives gpu = the bus id.
struct KernelFaults {
  const health::XidCounts* xids = nullptr;       // gpu_xid_errors_total{xid=…}
  const health::FaultCounts* classes = nullptr;  // one counter per health::fault_classes()
};

// Flattens one sample. Absent readings produce no point; `rates` (CPU busy, NIC utilization) may be
// null on the first sample. `at` stamps the view.
SampleView build_sample_view(const nvml::GpuSnapshot& gpus, const host::HostSnapshot& host,
                             const host::HostRates* rates, TimeNs at,
                             const KernelFaults& faults = {});
// The same into `into`, whose points it replaces, reusing their storage (the sampler keeps one
// view for all its samples).
void build_sample_view(SampleView& into, const nvml::GpuSnapshot& gpus,
                       const host::HostSnapshot& host, const host::HostRates* rates, TimeNs at,
                       const KernelFaults& faults = {});

// Canonical text of a label set, "gpu=0,uuid=GPU-1"; used as a key and in messages.
inline std::string labels_key(const Labels& labels) {
  return labels.key();
}

}  // namespace cardiac::rules
