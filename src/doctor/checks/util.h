// SPDX-License-Identifier: Apache-2.0
// Private helpers shared by the hardware, driver and cross-check code: a GPU's readings over
// the window, GPU references for findings, and small builders for findings and evidence.
// Everything is inline so that no symbol leaks into the library next to other checks' helpers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/format.h"
#include "doctor/finding.h"
#include "doctor/gpu_map.h"
#include "doctor/input.h"
#include "health/verdict.h"
#include "host/host.h"
#include "nvml/gpu.h"
#include "nvml/pci.h"

namespace cardiac::doctor::check_util {

// One reading and when it was taken: a hand-built or replayed reading may lack sampled_at,
// and then the snapshot's time is the best we have.
struct Sample {
  const nvml::GpuReading* reading = nullptr;
  TimeNs time = 0;
};

// Every reading of one GPU (by NVML index) over the window, oldest first.
struct GpuWindow {
  unsigned index = 0;
  std::vector<Sample> all;
  std::vector<Sample> ok;  // health kOk only: the others carry no values
  [[nodiscard]] const nvml::GpuReading& last() const { return *all.back().reading; }
  // Seconds between the first and the last answered reading; 0 with fewer than two.
  [[nodiscard]] double ok_span_s() const {
    if (ok.size() < 2) return 0;
    return static_cast<double>(ok.back().time - ok.front().time) / static_cast<double>(kNsPerSec);
  }
};

inline std::vector<GpuWindow> gpu_windows(const DoctorInput& in) {
  std::map<unsigned, GpuWindow> by_index;
  for (const auto& snap : in.gpu_samples) {
    if (!snap.available) continue;
    for (const auto& r : snap.gpus) {
      GpuWindow& w = by_index[r.index];
      w.index = r.index;
      Sample s{&r, r.sampled_at != 0 ? r.sampled_at : snap.taken_at};
      w.all.push_back(s);
      if (r.health == nvml::DeviceHealth::kOk) w.ok.push_back(s);
    }
  }
  std::vector<GpuWindow> out;
  for (auto& [index, w] : by_index) out.push_back(std::move(w));
  return out;
}

// The GPU a reading is about, completed from the map (a reading of a lost GPU may carry
// nothing but its index; the kernel log may know its serial).
inline GpuRef gpu_ref(const nvml::GpuReading& r, const GpuMap& map) {
  GpuRef g = r.pci_bus_id.empty() ? map.by_index(r.index) : map.by_bus_id(r.pci_bus_id);
  g.index = r.index;
  if (!r.pci_bus_id.empty()) g.pci_bus_id = nvml::normalize_pci_bus_id(r.pci_bus_id);
  if (!r.uuid.empty()) g.uuid = r.uuid;
  if (!r.serial.empty()) g.serial = r.serial;
  if (!r.name.empty()) g.name = r.name;
  return g;
}

// "GPU 3 (0000:3b:00.0, serial 1654922001234)": what a person needs to find the card.
inline std::string describe(const GpuRef& g) {
  std::string label = g.label();
  if (label.empty()) label = "the GPU";
  if (!g.serial.empty() && label.find(g.serial) == std::string::npos) {
    if (label.back() == ')') {
      label.insert(label.size() - 1, ", serial " + g.serial);
    } else {
      label += " (serial " + g.serial + ")";
    }
  }
  return label;
}

// What `nvidia-smi -i` accepts for this GPU: the bus id survives a reboot that renumbers.
inline std::string smi_target(const GpuRef& g) {
  if (!g.pci_bus_id.empty()) return g.pci_bus_id;
  if (!g.uuid.empty()) return g.uuid;
  if (g.index) return std::to_string(*g.index);
  return "<gpu>";
}

// The same rule as the status verdict, so that a process the status calls "stuck in the
// driver" is one the doctor calls so too.
using health::in_nvidia_driver;

// NVIDIA GPUs on the PCI bus that this host drives (not handed to a VM through vfio-pci).
inline std::vector<const host::PciDevice*> host_bus_gpus(const host::HostSnapshot* h) {
  std::vector<const host::PciDevice*> out;
  if (h == nullptr || !h->pci) return out;
  for (const auto& d : h->pci->gpus) {
    if (!host::passed_through_to_vm(d)) out.push_back(&d);
  }
  return out;
}

inline Finding make_finding(std::string id, Category category, Severity severity,
                            Confidence confidence, GpuRef gpu, std::string title,
                            std::string explanation) {
  Finding f;
  f.id = std::move(id);
  f.category = category;
  f.severity = severity;
  f.confidence = confidence;
  f.gpu = std::move(gpu);
  f.title = std::move(title);
  f.explanation = std::move(explanation);
  return f;
}

inline Evidence evidence(std::string kind, std::string text, std::optional<TimeNs> time,
                         std::string source = "nvml") {
  Evidence e;
  e.kind = std::move(kind);
  e.text = std::move(text);
  if (time && *time != 0) e.time = time;
  e.source = std::move(source);
  return e;
}

// The first and last value of a counter over the samples that carry it (equal with one such
// sample); nullopt when none carries it, or when the counter went backwards (a driver reload or
// a wrap: the difference would mean nothing).
template <class Get>
std::optional<std::pair<std::uint64_t, std::uint64_t>> counter_span(const std::vector<Sample>& s,
                                                                    Get get) {
  std::optional<std::uint64_t> first;
  std::optional<std::uint64_t> last;
  std::uint64_t prev = 0;
  for (const auto& x : s) {
    auto v = get(*x.reading);
    if (!v) continue;
    auto value = static_cast<std::uint64_t>(*v);
    if (first && value < prev) return std::nullopt;
    if (!first) first = value;
    last = value;
    prev = value;
  }
  if (!first || !last) return std::nullopt;
  return std::make_pair(*first, *last);
}

}  // namespace cardiac::doctor::check_util
