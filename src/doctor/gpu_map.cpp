// SPDX-License-Identifier: Apache-2.0
#include "doctor/gpu_map.h"

#include <algorithm>

#include "kmsg/event.h"

namespace cardiac::doctor {

GpuRef& GpuMap::entry_for_bus(const std::string& bus_id) {
  for (auto& g : gpus_) {
    if (g.pci_bus_id == bus_id) return g;
  }
  GpuRef fresh;
  fresh.pci_bus_id = bus_id;
  gpus_.push_back(fresh);
  return gpus_.back();
}

GpuMap::GpuMap(const DoctorInput& in) {
  // NVML first: it alone knows indices. Any snapshot may be the one that reached a device
  // (a GPU can fall off mid-window), so take identity from all of them.
  for (const auto& snap : in.gpu_samples) {
    for (const auto& r : snap.gpus) {
      // The agent's store keeps samples by index alone: such a GPU is still one the input
      // names, and a finding about it must not stand beside "GPUs: none found".
      GpuRef& g = r.pci_bus_id.empty() ? entry_for_index(r.index) : entry_for_bus(r.pci_bus_id);
      g.index = r.index;
      if (!r.uuid.empty()) g.uuid = r.uuid;
      if (!r.serial.empty()) g.serial = r.serial;
      if (!r.name.empty()) g.name = r.name;
    }
  }
  for (const auto& h : in.history) {
    GpuRef& g = entry_for_index(h.gpu);
    if (g.uuid.empty() && !h.uuid.empty()) g.uuid = h.uuid;
  }
  // The PCI bus: GPUs NVML may not list.
  if (const auto* h = in.last_host(); h != nullptr && h->pci) {
    for (const auto& d : h->pci->gpus) entry_for_bus(d.bus_id);
  }
  // The driver's boot lines: bus id → UUID (and the serial line that follows it).
  for (const auto& e : in.events) {
    if (e.kind != kmsg::EventKind::kGpuMap || e.pci_bus_id.empty()) continue;
    GpuRef& g = entry_for_bus(e.pci_bus_id);
    if (g.uuid.empty() && !e.uuid.empty()) g.uuid = e.uuid;
    if (g.serial.empty() && !e.serial.empty()) g.serial = e.serial;
  }
  std::stable_sort(gpus_.begin(), gpus_.end(), [](const GpuRef& a, const GpuRef& b) {
    if (a.index.has_value() != b.index.has_value()) return a.index.has_value();
    if (a.index && b.index && *a.index != *b.index) return *a.index < *b.index;
    return a.pci_bus_id < b.pci_bus_id;
  });
}
GpuRef& GpuMap::entry_for_index(unsigned index) {
  for (auto& g : gpus_) {
    if (g.index == index) return g;
  }
  GpuRef fresh;
  fresh.index = index;
  gpus_.push_back(fresh);
  return gpus_.back();
}

GpuRef GpuMap::by_bus_id(std::string_view bus_id) const {
  std::string norm = kmsg::normalize_kernel_bus_id(bus_id);
  if (norm.empty()) return {};
  for (const auto& g : gpus_) {
    if (g.pci_bus_id == norm) return g;
  }
  GpuRef only;
  only.pci_bus_id = norm;
  return only;
}

GpuRef GpuMap::by_index(unsigned index) const {
  for (const auto& g : gpus_) {
    if (g.index == index) return g;
  }
  GpuRef only;
  only.index = index;
  return only;
}

GpuRef GpuMap::by_uuid(std::string_view uuid) const {
  for (const auto& g : gpus_) {
    if (g.uuid == uuid) return g;
  }
  GpuRef only;
  only.uuid = std::string(uuid);
  return only;
}

}  // namespace cardiac::doctor
