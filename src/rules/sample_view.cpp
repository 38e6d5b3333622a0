// SPDX-License-Identifier: Apache-2.0
// Builds the flat point list from GPU and host snapshots, and the catalog of metric names.
#include "rules/sample_view.h"

#include <algorithm>
#include <cmath>

#include "host/mounts.h"
#include "nvml/pci.h"
#include "nvml/types.h"

namespace cardiac::rules {
namespace {

// Built on first use: a throw (bad_alloc) while building them reaches a caller, not terminate()
// during static initialisation.
const std::vector<MetricInfo>& base_metrics() {
  static const std::vector<MetricInfo> kBaseMetrics = {
      {"gpu_up", Scope::kGpu, false, "1 when the GPU answers normally, 0 when lost/hung/erroring"},
      {"gpu_count", Scope::kHost, false, "GPUs NVML reports (0 when NVML is unusable)"},
      {"nvml_available", Scope::kHost, false, "1 when NVML loaded and initialised, else 0"},
      {"gpu_temperature", Scope::kGpu, false, "GPU core temperature, °C"},
      {"gpu_temperature_slowdown", Scope::kGpu, false, "slowdown threshold, °C"},
      {"gpu_temperature_shutdown", Scope::kGpu, false, "shutdown threshold, °C"},
      {"gpu_utilization_gpu", Scope::kGpu, false, "GPU utilization, %"},
      {"gpu_utilization_memory", Scope::kGpu, false, "memory controller utilization, %"},
      {"gpu_memory_used_bytes", Scope::kGpu, false, "frame buffer used, bytes"},
      {"gpu_memory_used_pct", Scope::kGpu, false, "frame buffer used, % of total"},
      {"gpu_power_usage_w", Scope::kGpu, false, "board power, W"},
      {"gpu_process_count", Scope::kGpu, false, "processes holding the GPU"},
      {"gpu_clock_event_hw_slowdown", Scope::kGpu, false, "1 while HW slowdown is active"},
      {"gpu_clock_event_hw_thermal", Scope::kGpu, false, "1 while HW thermal slowdown is active"},
      {"gpu_clock_event_hw_power_brake", Scope::kGpu, false, "1 while HW power brake is active"},
      {"gpu_clock_event_sw_thermal", Scope::kGpu, false, "1 while SW thermal slowdown is active"},
      {"gpu_clock_event_sw_power_cap", Scope::kGpu, false, "1 while SW power capping is active"},
      {"gpu_ecc_volatile_corrected", Scope::kGpu, true, "corrected ECC errors since driver load"},
      {"gpu_ecc_volatile_uncorrected", Scope::kGpu, true,
       "double-bit ECC errors since driver load"},
      {"gpu_ecc_aggregate_corrected", Scope::kGpu, true, "corrected ECC errors, lifetime"},
      {"gpu_ecc_aggregate_uncorrected", Scope::kGpu, true, "uncorrected ECC errors, lifetime"},
      {"gpu_retired_pages_total", Scope::kGpu, true, "pages retired (SBE + DBE)"},
      {"gpu_retired_pages_pending", Scope::kGpu, false, "1 when a retirement waits for a reset"},
      {"gpu_remapped_rows_uncorrected", Scope::kGpu, true, "rows remapped for uncorrected errors"},
      {"gpu_remapped_rows_pending", Scope::kGpu, false, "1 when a row remap waits for a reset"},
      {"gpu_remapped_rows_failure", Scope::kGpu, false, "1 when a row remap failed"},
      {"gpu_pcie_gen_current", Scope::kGpu, false, "PCIe link generation now"},
      {"gpu_pcie_gen_max", Scope::kGpu, false, "PCIe link generation, maximum"},
      {"gpu_pcie_width_current", Scope::kGpu, false, "PCIe link width now, lanes"},
      {"gpu_pcie_width_max", Scope::kGpu, false, "PCIe link width, maximum"},
      {"gpu_pcie_replay_counter", Scope::kGpu, true, "PCIe replays"},
      {"gpu_pcie_replay_limit_per_min", Scope::kGpu, false,
       "DCGM's expected replays per minute for the current gen and width"},
      {"host_cpu_busy_pct", Scope::kHost, false, "CPU busy, % (needs two samples)"},
      {"host_memory_available_pct", Scope::kHost, false, "memory available, % of total"},
      {"host_swap_used_bytes", Scope::kHost, false, "swap in use, bytes"},
      {"host_swap_used_pct", Scope::kHost, false, "swap in use, % of swap"},
      {"host_disk_used_pct", Scope::kHost, false, "file system used, % (label mount)"},
      {"host_dstate_processes", Scope::kHost, false, "processes in uninterruptible sleep"},
      {"host_nic_util_pct", Scope::kHost, false, "max(rx, tx) % of link speed (label nic)"},
      {"host_nic_errors_total", Scope::kHost, true, "rx + tx errors (label nic)"},
      {"host_nic_drops_total", Scope::kHost, true, "rx + tx drops (label nic)"},
      {"host_inlet_temperature_c", Scope::kHost, false,
       "inlet/room temperature, °C (no source yet)"},
      {"kmsg_up", Scope::kHost, false,
       "1 while the configured kernel log is read, 0 while it cannot be (absent when not watched)"},
      {"gpu_xid_errors_total", Scope::kGpu, true,
       "Xids seen since the agent started (labels xid, pci_bus_id)", true},
      // The serving view (agent/serving_watch.h): present only while it has something to say.
      {"gpu_process_vram_oom_minutes", Scope::kGpu, false,
       "minutes until a steadily growing GPU process fills its GPU (labels pid, process)"},
      {"serving_engine_up", Scope::kHost, false,
       "1 when the engine's /metrics was read, 0 when not (label engine)"},
      {"serving_kv_cache_usage_pct", Scope::kHost, false,
       "engine KV cache in use, % (label engine)"},
      {"serving_requests_waiting", Scope::kHost, false, "requests queued in the engine"},
      {"serving_requests_running", Scope::kHost, false, "requests in the engine's batch"},
      {"serving_preemptions_total", Scope::kHost, true, "requests the engine preempted"},
      {"serving_kv_cache_full", Scope::kHost, false,
       "1 when the KV cache is >= 95 % full with requests waiting or preemptions rising"},
      {"serving_queue_while_gpu_idle", Scope::kHost, false,
       "1 when requests wait while the engine's GPUs are < 50 % busy"},
      // The security watch (agent/security_watch.h): one point per sign of compromise found by
      // the last scan, its value the finding's severity (1 info, 2 warning, 3 critical).
      {"security_gpu_cryptojacking", Scope::kHost, false,
       "a process mines cryptocurrency on a GPU (labels finding, summary, runbook)"},
      {"security_unknown_gpu_process", Scope::kHost, false,
       "a process outside any job keeps a GPU busy"},
      {"security_uid0_account", Scope::kHost, false, "an account other than root has UID 0"},
      {"security_uplink_flood", Scope::kHost, false,
       "one process sends most of the uplink to many remote addresses"},
      {"security_deleted_executable", Scope::kHost, false,
       "a process runs an executable deleted from disk"},
      {"security_tmp_executable", Scope::kHost, false,
       "a process runs an executable from /tmp, /dev/shm or /var/tmp"},
      {"security_new_listening_port", Scope::kHost, false, "a port began to listen"},
  };
  return kBaseMetrics;
}

// The base list plus one counter per fault class of health's catalog.
const std::vector<MetricInfo>& all_metrics() {
  static const std::vector<MetricInfo> kMetrics = [] {
    std::vector<MetricInfo> out = base_metrics();
    for (const auto& c : health::fault_classes()) {
      const Scope scope =
          c.fault_class == health::FaultClass::kSxidFatal ? Scope::kHost : Scope::kGpu;
      out.push_back({c.rule_metric, scope, true, c.meaning, true});
    }
    return out;
  }();
  return kMetrics;
}

// Writes the points over those `v` already holds, reusing their names' storage: a sample's
// names are mostly last sample's, and making each anew was a quarter of the agent's allocations.
class Builder {
 public:
  explicit Builder(SampleView& v) : v_(v) {}
  void add(std::string_view metric, const Labels& labels, double value) {
    if (n_ < v_.points.size()) {
      Point& p = v_.points[n_];
      p.metric.assign(metric);
      p.labels = labels;
      p.value = value;
    } else {
      v_.points.push_back(Point{std::string(metric), labels, value});
    }
    ++n_;
  }
  // Drops what is left of the points held before.
  void finish() { v_.points.resize(n_); }
  template <class T>
  void add(std::string_view metric, const Labels& labels, const std::optional<T>& value) {
    if (value) add(metric, labels, static_cast<double>(*value));
  }

 private:
  SampleView& v_;
  std::size_t n_ = 0;
};

// {gpu, uuid} of `g`: `kept` when it names the same GPU, else made anew (and kept).
const Labels& gpu_labels(const nvml::GpuReading& g, Labels& kept) {
  const std::string index = std::to_string(g.index);
  const auto gpu = kept.find("gpu");
  const auto uuid = kept.find("uuid");
  const bool same =
      gpu != kept.end() && gpu->second == index &&
      (g.uuid.empty() ? uuid == kept.end() : uuid != kept.end() && uuid->second == g.uuid) &&
      kept.size() == (g.uuid.empty() ? 1U : 2U);
  if (!same) {
    Labels l{{"gpu", index}};
    if (!g.uuid.empty()) l["uuid"] = g.uuid;
    kept = std::move(l);
  }
  return kept;
}

void add_gpu(Builder& b, const nvml::GpuReading& g, Labels& kept) {
  const Labels& l = gpu_labels(g, kept);
  // kNotSampled says nothing about the GPU itself (the collector stopped early): no gpu_up point.
  if (g.health != nvml::DeviceHealth::kNotSampled) {
    b.add("gpu_up", l, g.health == nvml::DeviceHealth::kOk ? 1.0 : 0.0);
  }
  b.add("gpu_temperature", l, g.temperature);
  b.add("gpu_temperature_slowdown", l, g.temperature_slowdown);
  b.add("gpu_temperature_shutdown", l, g.temperature_shutdown);
  b.add("gpu_utilization_gpu", l, g.utilization_gpu);
  b.add("gpu_utilization_memory", l, g.utilization_memory);
  b.add("gpu_memory_used_bytes", l, g.memory_used);
  if (g.memory_used && g.memory_total && *g.memory_total > 0) {
    b.add("gpu_memory_used_pct", l,
          100.0 * static_cast<double>(*g.memory_used) / static_cast<double>(*g.memory_total));
  }
  if (g.power_usage_mw) b.add("gpu_power_usage_w", l, *g.power_usage_mw / 1000.0);
  if (g.processes_supported) b.add("gpu_process_count", l, static_cast<double>(g.processes.size()));
  if (g.clock_event_reasons) {
    const auto bit = [&](unsigned long long mask) {
      return (*g.clock_event_reasons & mask) != 0 ? 1.0 : 0.0;
    };
    b.add("gpu_clock_event_hw_slowdown", l, bit(nvml::kReasonHwSlowdown));
    b.add("gpu_clock_event_hw_thermal", l, bit(nvml::kReasonHwThermalSlowdown));
    b.add("gpu_clock_event_hw_power_brake", l, bit(nvml::kReasonHwPowerBrakeSlowdown));
    b.add("gpu_clock_event_sw_thermal", l, bit(nvml::kReasonSwThermalSlowdown));
    b.add("gpu_clock_event_sw_power_cap", l, bit(nvml::kReasonSwPowerCap));
  }
  b.add("gpu_ecc_volatile_corrected", l, g.ecc_volatile_corrected);
  b.add("gpu_ecc_volatile_uncorrected", l, g.ecc_volatile_uncorrected);
  b.add("gpu_ecc_aggregate_corrected", l, g.ecc_aggregate_corrected);
  b.add("gpu_ecc_aggregate_uncorrected", l, g.ecc_aggregate_uncorrected);
  if (g.retired_pages_sbe && g.retired_pages_dbe) {
    b.add("gpu_retired_pages_total", l,
          static_cast<double>(*g.retired_pages_sbe) + static_cast<double>(*g.retired_pages_dbe));
  }
  b.add("gpu_retired_pages_pending", l, g.retired_pages_pending);
  b.add("gpu_remapped_rows_uncorrected", l, g.remapped_rows_uncorrected);
  b.add("gpu_remapped_rows_pending", l, g.remapped_rows_pending);
  b.add("gpu_remapped_rows_failure", l, g.remapped_rows_failure);
  b.add("gpu_pcie_gen_current", l, g.pcie_gen_current);
  b.add("gpu_pcie_gen_max", l, g.pcie_gen_max);
  b.add("gpu_pcie_width_current", l, g.pcie_width_current);
  b.add("gpu_pcie_width_max", l, g.pcie_width_max);
  b.add("gpu_pcie_replay_counter", l, g.pcie_replay_counter);
  if (g.pcie_gen_current && g.pcie_width_current) {
    const double per_lane = pcie_replays_per_lane_per_min(*g.pcie_gen_current);
    // DCGM rounds the allowance up: ceil(per-lane rate × lanes).
    if (per_lane > 0) {
      b.add("gpu_pcie_replay_limit_per_min", l, std::ceil(per_lane * *g.pcie_width_current));
    }
  }
}

void add_host(Builder& b, const host::HostSnapshot& h, const host::HostRates* rates) {
  const Labels none;
  if (rates && rates->cpu.total) b.add("host_cpu_busy_pct", none, rates->cpu.total->busy);
  if (h.memory && h.memory->total > 0) {
    const double total = static_cast<double>(h.memory->total);
    if (h.memory->available) {
      b.add("host_memory_available_pct", none,
            100.0 * static_cast<double>(*h.memory->available) / total);
    }
    if (h.memory->swap_total && h.memory->swap_free) {
      const std::uint64_t used =
          *h.memory->swap_total - std::min(*h.memory->swap_free, *h.memory->swap_total);
      b.add("host_swap_used_bytes", none, static_cast<double>(used));
      if (*h.memory->swap_total > 0) {
        b.add("host_swap_used_pct", none,
              100.0 * static_cast<double>(used) / static_cast<double>(*h.memory->swap_total));
      }
    }
  }
  for (const auto& fs : h.filesystems) {
    if (auto pct = host::used_percent(fs))
      b.add("host_disk_used_pct", {{"mount", fs.mount_point}}, *pct);
  }
  // Only a complete collection says how many D-state processes there are.
  if (!h.timed_out) {
    b.add("host_dstate_processes", none, static_cast<double>(h.dstate_processes.size()));
  }
  for (const auto& n : h.nics) {
    const Labels l{{"nic", n.name}};
    b.add("host_nic_errors_total", l, static_cast<double>(n.rx_errors + n.tx_errors));
    b.add("host_nic_drops_total", l, static_cast<double>(n.rx_drops + n.tx_drops));
  }
  if (rates) {
    for (const auto& r : rates->nics) {
      if (!r.rx_util_percent && !r.tx_util_percent) continue;
      const double util = std::max(r.rx_util_percent.value_or(0), r.tx_util_percent.value_or(0));
      b.add("host_nic_util_pct", {{"nic", r.name}}, util);
    }
  }
}

// Fault counters: labelled like the GPU on that bus in this sample when there is one.
void add_faults(Builder& b, const nvml::GpuSnapshot& gpus, const KernelFaults& faults) {
  auto labels_of = [&](const std::string& logged_bus) {
    const std::string bus = nvml::normalize_pci_bus_id(logged_bus);
    Labels l{{"pci_bus_id", bus}, {"gpu", bus}};
    for (const auto& g : gpus.gpus) {
      if (bus.empty() || nvml::normalize_pci_bus_id(g.pci_bus_id) != bus) continue;
      l["gpu"] = std::to_string(g.index);
      if (!g.uuid.empty()) l["uuid"] = g.uuid;
    }
    return l;
  };
  if (faults.xids) {
    for (const auto& [key, count] : *faults.xids) {
      Labels l = labels_of(key.first);
      l["xid"] = std::to_string(key.second);
      b.add("gpu_xid_errors_total", l, static_cast<double>(count));
    }
  }
  if (faults.classes) {
    for (const auto& [key, count] : *faults.classes) {
      for (const auto& c : health::fault_classes()) {
        if (c.fault_class != key.second) continue;
        if (c.fault_class == health::FaultClass::kSxidFatal) {  // a switch, not a GPU
          b.add(c.rule_metric, {{"pci_bus_id", nvml::normalize_pci_bus_id(key.first)}},
                static_cast<double>(count));
        } else {
          b.add(c.rule_metric, labels_of(key.first), static_cast<double>(count));
        }
      }
    }
  }
}

}  // namespace

std::string_view scope_name(Scope s) {
  return s == Scope::kGpu ? "gpu" : "host";
}

const std::vector<MetricInfo>& known_metrics() {
  return all_metrics();
}

const MetricInfo* find_metric(std::string_view name) {
  for (const auto& m : all_metrics()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

double pcie_replays_per_lane_per_min(unsigned gen) {
  // DCGM health watch (PCIE): link speed in Gbps × 1e-12 BER × 60 s, per lane.
  switch (gen) {
    case 1:
      return 0.15;
    case 2:
      return 0.3;
    case 3:
      return 0.48;
    case 4:
      return 0.96;
    case 5:
      return 1.92;
    case 6:
      return 3.84;
    default:
      return 0;
  }
}

void build_sample_view(SampleView& into, const nvml::GpuSnapshot& gpus,
                       const host::HostSnapshot& host, const host::HostRates* rates, TimeNs at,
                       const KernelFaults& faults) {
  into.at = at;
  Builder b(into);
  // An unusable NVML means zero usable GPUs, which is what an expected-count rule must see.
  b.add("gpu_count", {}, gpus.available ? static_cast<double>(gpus.gpus.size()) : 0.0);
  b.add("nvml_available", {}, gpus.available ? 1.0 : 0.0);
  into.gpu_labels.resize(gpus.gpus.size());
  for (std::size_t i = 0; i < gpus.gpus.size(); ++i) add_gpu(b, gpus.gpus[i], into.gpu_labels[i]);
  add_host(b, host, rates);
  add_faults(b, gpus, faults);
  b.finish();
}

SampleView build_sample_view(const nvml::GpuSnapshot& gpus, const host::HostSnapshot& host,
                             const host::HostRates* rates, TimeNs at, const KernelFaults& faults) {
  SampleView v;
  build_sample_view(v, gpus, host, rates, at, faults);
  return v;
}

}  // namespace cardiac::rules
