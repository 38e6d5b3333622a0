// SPDX-License-Identifier: Apache-2.0
// Builds the scheduler's cluster from the agent's report, the fences and the running jobs.
#include "queue/cluster_view.h"

#include "core/format.h"
#include "core/units.h"
#include "health/faults.h"
#include "nvml/pci.h"

namespace cardiac::queue {
namespace {

// Without a process list, memory in use beyond this says someone is on the GPU (an idle GPU
// with persistence mode shows a few MiB).
constexpr std::uint64_t kOutsideMemoryBytes = 1ULL << 30;

}  // namespace

const std::set<int>& fencing_xids() {
  static const std::set<int> kXids = [] {
    std::set<int> out;
    for (const auto& x : health::xid_catalog()) {
      if (x.fences) out.insert(x.code);
    }
    return out;
  }();
  return kXids;
}

std::optional<std::string> critical_finding(
    const nvml::GpuReading& g, const std::map<std::pair<std::string, int>, std::uint64_t>& xids) {
  return health::fence_reason(g, xids);
}

bool fence_may_lift(std::string_view reason) {
  using nvml::DeviceHealth;
  for (DeviceHealth h : {DeviceHealth::kError, DeviceHealth::kUnresponsive}) {
    if (reason.starts_with(fmt::format("GPU {}:", nvml::device_health_name(h)))) return true;
  }
  // "Xid <code> on <bus>", as health::fence_reason() writes it.
  constexpr std::string_view kXid = "Xid ";
  if (!reason.starts_with(kXid)) return false;
  int code = 0;
  std::size_t i = kXid.size();
  for (; i < reason.size() && reason[i] >= '0' && reason[i] <= '9'; ++i) {
    code = code * 10 + (reason[i] - '0');
    if (code > 100000) return false;
  }
  if (i == kXid.size() || !reason.substr(i).starts_with(" on ")) return false;
  switch (health::lookup_xid(code).action) {
    case health::XidAction::kResetGpu:
    case health::XidAction::kReboot:
    case health::XidAction::kInspectHardware:
    case health::XidAction::kCheckMechanicals:
      return false;
    default:
      return true;
  }
}

bool fence_matches(const Fence& f, unsigned index, const std::string& uuid) {
  if (!f.uuid.empty() && !uuid.empty()) return f.uuid == uuid;
  return f.gpu == index;
}

ClusterView build_cluster(const ClusterInput& in) {
  ClusterView v;
  sched::Node node;
  node.name = in.hostname;
  if (in.report) {
    for (const auto& gs : in.report->gpus) {
      const auto& g = gs.reading;
      if (!g.uuid.empty()) v.uuid_of[g.index] = g.uuid;
      if (g.utilization_gpu) v.utilization[g.index] = *g.utilization_gpu;
    }
  }
  // GPUs the queue holds now: their processes are the queue's, whatever /proc says.
  std::set<unsigned> allocated;
  for (const auto& j : in.running) {
    for (std::size_t i = 0; i < j.gpu_indices.size(); ++i) {
      std::string uuid = i < j.gpu_uuids.size() ? j.gpu_uuids[i] : "";
      if (auto idx = current_index(v, uuid, j.gpu_indices[i])) allocated.insert(*idx);
    }
  }
  // The NUMA node of each NVIDIA PCI function, by normalized bus id, normalized once.
  std::map<std::string, int> numa_of;
  if (in.report && in.report->host.pci) {
    for (const auto& dev : in.report->host.pci->gpus) {
      if (dev.numa_node) numa_of.emplace(nvml::normalize_pci_bus_id(dev.bus_id), *dev.numa_node);
    }
  }
  if (in.report) {
    for (const auto& gs : in.report->gpus) {
      const auto& g = gs.reading;
      sched::Gpu gpu;
      gpu.index = g.index;
      gpu.memory_bytes = g.memory_total.value_or(0);
      // Locality for multi-GPU jobs: GPUs with active NVLinks share the NVLink fabric (an
      // NVSwitch board; bridged pairs are not told apart), and the slot's NUMA node from sysfs.
      for (const auto& link : g.nvlinks) {
        if (link.active) gpu.nvlink_domain = 0;
      }
      if (!numa_of.empty() && !g.pci_bus_id.empty()) {
        auto it = numa_of.find(nvml::normalize_pci_bus_id(g.pci_bus_id));
        if (it != numa_of.end()) gpu.numa_node = it->second;
      }
      for (const auto& f : in.fences) {
        if (fence_matches(f, g.index, g.uuid)) {
          v.fenced[g.index] = fmt::format("fenced by {}: {}", f.who, f.reason);
          break;
        }
      }
      if (auto why = critical_finding(g, in.xid_counts)) {
        v.critical[g.index] = *why;
        v.fenced.emplace(g.index, *why);
      } else if (g.health == nvml::DeviceHealth::kNotSampled && !v.fenced.count(g.index)) {
        v.fenced[g.index] = "not sampled in the latest GPU sample";
      }
      if (v.fenced.count(g.index)) {
        gpu.health = sched::GpuHealth::kFenced;
      } else if (auto a = in.critical_alerts.find(g.index); a != in.critical_alerts.end()) {
        // The placement takes degraded GPUs only when healthy ones do not fit.
        gpu.health = sched::GpuHealth::kDegraded;
        v.alerting[g.index] = a->second;
      }
      if (in.count_outside && !allocated.count(g.index)) {
        std::uint64_t outside_mem = 0;
        std::string who;
        for (const auto& p : g.processes) {
          if (in.is_queue_or_gone && in.is_queue_or_gone(p.pid)) continue;
          outside_mem += p.used_memory_bytes.value_or(0);
          if (who.empty()) {
            who = p.name.empty() ? fmt::format("pid {}", p.pid)
                                 : fmt::format("pid {} ({})", p.pid, p.name);
          }
        }
        if (!g.processes_supported && g.memory_used.value_or(0) > kOutsideMemoryBytes) {
          outside_mem = *g.memory_used;
          who = fmt::format("{} in use and no process list", format_bytes(*g.memory_used));
        }
        if (!who.empty()) {
          gpu.busy_outside = true;
          gpu.memory_used_outside = outside_mem;
          v.busy_outside[g.index] = who;
        }
      }
      node.gpus.push_back(gpu);
    }
  }
  v.cluster.nodes.push_back(std::move(node));
  for (const auto& j : in.running) {
    sched::Running r;
    r.id = j.id;
    r.user = j.user;
    r.account = j.account;
    sched::NodeGpus ng;
    for (std::size_t i = 0; i < j.gpu_indices.size(); ++i) {
      std::string uuid = i < j.gpu_uuids.size() ? j.gpu_uuids[i] : "";
      if (auto idx = current_index(v, uuid, j.gpu_indices[i])) ng.gpus.push_back(*idx);
    }
    r.placement.push_back(std::move(ng));
    r.shared = j.shared;
    r.gpu_memory = j.gpu_mem;
    r.start_time = j.start_ns.value_or(j.submit_ns);
    r.time_limit = j.time_limit;
    v.cluster.running.push_back(std::move(r));
  }
  return v;
}

std::optional<unsigned> current_index(const ClusterView& v, const std::string& uuid,
                                      unsigned index) {
  if (!uuid.empty()) {
    for (const auto& [i, u] : v.uuid_of) {
      if (u == uuid) return i;
    }
  }
  // The UUID is gone from the report (a lost GPU may not say it): keep the recorded index,
  // unless another GPU now answers under it.
  auto it = v.uuid_of.find(index);
  if (it != v.uuid_of.end() && !uuid.empty() && it->second != uuid) return std::nullopt;
  return index;
}

sched::Job to_sched_job(const Job& j) {
  sched::Job s;
  s.id = j.id;
  s.user = j.user;
  s.account = j.account;
  s.gpus = j.gpus;
  s.gpu_memory = j.gpu_mem;
  s.shared = j.shared;
  s.priority = j.priority;
  s.submit_time = j.submit_ns;
  s.time_limit = j.time_limit;
  s.after = j.after;
  s.restarts = j.restarts;
  s.held = j.state == JobState::kHeld;
  s.eligible_time = j.eligible_ns;
  return s;
}

}  // namespace cardiac::queue
