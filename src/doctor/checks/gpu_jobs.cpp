// SPDX-License-Identifier: Apache-2.0
// The jobs on a finding's GPU: who is hit by a fault, and whose job to requeue or warn.
#include <algorithm>

#include "core/format.h"
#include "doctor/checks/checks.h"
#include "jobmap/jobmap.h"
#include "nvml/pci.h"

namespace cardiac::doctor {
namespace {

const nvml::GpuReading* reading_for(const nvml::GpuSnapshot& snap, const GpuRef& ref) {
  for (const auto& g : snap.gpus) {
    if (!ref.uuid.empty() && g.uuid == ref.uuid) return &g;
  }
  const std::string bus = nvml::normalize_pci_bus_id(ref.pci_bus_id);
  for (const auto& g : snap.gpus) {
    if (!bus.empty() && nvml::normalize_pci_bus_id(g.pci_bus_id) == bus) return &g;
  }
  if (ref.uuid.empty() && bus.empty() && ref.index) {
    for (const auto& g : snap.gpus) {
      if (g.index == *ref.index) return &g;
    }
  }
  return nullptr;
}

}  // namespace

void add_gpu_jobs(const DoctorInput& in, std::vector<Finding>& findings) {
  const nvml::GpuSnapshot* snap = in.last_gpus();
  if (!snap) return;
  for (auto& f : findings) {
    if (f.gpu.empty()) continue;
    const nvml::GpuReading* g = reading_for(*snap, f.gpu);
    if (!g) continue;
    std::vector<std::string> named;
    for (const auto& p : g->processes) {
      if (p.job.empty()) continue;
      JobOnGpu job{p.job_source, p.job};
      const std::string who =
          p.name.empty() ? fmt::format("pid {}", p.pid) : fmt::format("pid {} ({})", p.pid, p.name);
      f.evidence.push_back(
          {.kind = "process",
           .text = fmt::format("{} belongs to {}", who, jobmap::describe(p.job_source, p.job)),
           .source = fmt::format("/proc/{}/{}", p.pid, p.job_from)});
      if (std::find(f.jobs.begin(), f.jobs.end(), job) == f.jobs.end()) {
        f.jobs.push_back(job);
        named.push_back(jobmap::describe(p.job_source, p.job));
      }
    }
    if (named.empty()) continue;
    if (!f.explanation.empty()) f.explanation += " ";
    f.explanation += fmt::format("Running on this GPU: {}.", fmt::join(named, ", "));
  }
}

}  // namespace cardiac::doctor
