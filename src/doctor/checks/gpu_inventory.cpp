// SPDX-License-Identifier: Apache-2.0
// Inventory: GPUs on the PCI bus that NVML does not list (or lost), fewer GPUs than expected.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/gpu_hardware.h"

namespace cardiac::doctor::hardware_detail {
namespace {

std::string window_bus_id(const GpuWindow& w) {
  for (auto it = w.all.rbegin(); it != w.all.rend(); ++it) {
    if (!it->reading->pci_bus_id.empty())
      return nvml::normalize_pci_bus_id(it->reading->pci_bus_id);
  }
  return "";
}

}  // namespace

// A GPU that never told NVML its bus id (lost from the start) is the one GPU on the bus that
// NVML does not claim, when there is exactly one of each (as the status report does).
std::map<unsigned, std::string> resolve_anonymous(const std::vector<GpuWindow>& windows,
                                                  const host::HostSnapshot* h) {
  std::set<std::string> known;
  std::vector<unsigned> anonymous;
  for (const auto& w : windows) {
    std::string id = window_bus_id(w);
    if (id.empty()) {
      anonymous.push_back(w.index);
    } else {
      known.insert(id);
    }
  }
  std::vector<std::string> unclaimed;
  for (const auto* d : check_util::host_bus_gpus(h)) {
    std::string id = nvml::normalize_pci_bus_id(d->bus_id);
    if (!known.count(id)) unclaimed.push_back(id);
  }
  if (anonymous.size() != 1 || unclaimed.size() != 1) return {};
  return {{anonymous.front(), unclaimed.front()}};
}

void check_missing(const DoctorInput& in, const std::vector<GpuWindow>& windows,
                   const std::map<unsigned, std::string>& anonymous, const GpuMap& map,
                   std::vector<Finding>& out) {
  const auto* snap = in.last_gpus();
  if (snap == nullptr || !snap->available) return;  // the driver check says why
  std::set<std::string> known;
  for (const auto& w : windows) {
    std::string id = window_bus_id(w);
    if (id.empty()) {
      auto it = anonymous.find(w.index);
      if (it == anonymous.end()) return;  // cannot tell which card NVML lists: do not guess
      id = it->second;
    }
    known.insert(id);
  }
  for (const auto* d : check_util::host_bus_gpus(in.last_host())) {
    std::string id = nvml::normalize_pci_bus_id(d->bus_id);
    if (known.count(id)) continue;
    std::string driver = d->driver.value_or("");
    GpuRef g = map.by_bus_id(id);
    std::string why =
        driver == "nvidia"
            ? "It is bound to the nvidia driver, which then failed to bring it up (look for "
              "`RmInitAdapter failed` in the kernel log) or lost it during boot."
        : driver.empty() ? "No driver is bound to it: the nvidia driver could not take it."
                         : fmt::format("It is bound to {} instead of nvidia.", driver);
    Finding f = make_finding(
        "gpu.missing_from_nvml", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("GPU at {} is on the PCI bus but NVML does not list it", id),
        fmt::format("The card answers on the PCI bus, so it has power and a link, but the "
                    "driver does not offer it: no job can use it. {}",
                    why));
    f.evidence.push_back(
        evidence("reading",
                 fmt::format("PCI {}: device 0x{:04x}, driver {}, link {} GT/s x{}", d->bus_id,
                             d->device, driver.empty() ? "none" : driver,
                             d->current_link_gts.value_or(0), d->current_link_width.value_or(0)),
                 std::nullopt, "/sys/bus/pci/devices/" + d->bus_id));
    f.evidence.push_back(evidence(
        "reading", fmt::format("NVML lists {} GPU(s)", snap->system.device_count), snap->taken_at));
    if (!driver.empty() && driver != "nvidia") {
      f.actions.push_back(
          fmt::format("Bind it to nvidia: blacklist {} and reboot (or rebind "
                      "through /sys/bus/pci/drivers)",
                      driver));
    }
    f.actions.push_back(fmt::format(
        "Read the kernel log for {}: `RmInitAdapter failed`, Xid 79, AER errors (`cardiac "
        "doctor` lists them)",
        id));
    f.actions.push_back(
        "Cold power cycle the server (remove power for 30 s); if the GPU is still missing, "
        "reseat it and check its power cables");
    f.actions.push_back("If it stays missing, do the cross-check below");
    out.push_back(std::move(f));
  }
}

void check_expected_count(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.config.expected_gpus) return;
  unsigned expected = *in.config.expected_gpus;
  const auto* snap = in.last_gpus();
  auto bus = check_util::host_bus_gpus(in.last_host());
  bool from_nvml = snap != nullptr && snap->available;
  if (!from_nvml && (in.last_host() == nullptr || !in.last_host()->pci)) return;
  auto seen = from_nvml ? std::max<unsigned>(snap->system.device_count,
                                             static_cast<unsigned>(snap->gpus.size()))
                        : static_cast<unsigned>(bus.size());
  if (seen >= expected) return;
  Finding f = make_finding(
      "gpu.count_below_expected", Category::kHardware, Severity::kCritical,
      from_nvml ? Confidence::kHigh : Confidence::kMedium, {},
      fmt::format("{} GPU(s) found, {} expected", seen, expected),
      from_nvml ? "NVML lists fewer GPUs than this machine should have: a card dropped off the "
                  "bus, failed to initialise or lost power."
                : "NVML is not usable, so the GPUs were counted on the PCI bus: fewer are there "
                  "than this machine should have.");
  std::vector<std::string> ids;
  for (const auto* d : bus) ids.push_back(nvml::normalize_pci_bus_id(d->bus_id));
  if (from_nvml) {
    f.evidence.push_back(evidence(
        "reading", fmt::format("NVML lists {} GPU(s)", snap->system.device_count), snap->taken_at));
  }
  if (in.last_host() != nullptr && in.last_host()->pci) {
    f.evidence.push_back(evidence("reading",
                                  fmt::format("PCI bus: {} NVIDIA GPU(s){}{}", ids.size(),
                                              ids.empty() ? "" : ": ", fmt::join(ids, ", ")),
                                  std::nullopt, "/sys/bus/pci/devices"));
  }
  f.actions = {
      "Find the missing card: compare the bus ids above with the server's slot map (`lspci -d "
      "10de: -nn`, `nvidia-smi -L`)",
      "Cold power cycle the server (remove power for 30 s); a card missing from the PCI bus did "
      "not train its link or has no power",
      "If it is still missing, reseat it and check its power cables, then do the cross-check "
      "with a known-good card",
  };
  out.push_back(std::move(f));
}

}  // namespace cardiac::doctor::hardware_detail
