// SPDX-License-Identifier: Apache-2.0
// Verdict bookkeeping and the inventory checks.
#include "health/verdict.h"

#include <algorithm>
#include <set>

#include "core/format.h"
#include "nvml/pci.h"

namespace cardiac::health {

std::string_view level_name(Level l) {
  switch (l) {
    case Level::kOk:
      return "OK";
    case Level::kWarn:
      return "WARN";
    case Level::kFail:
      return "FAIL";
  }
  return "FAIL";
}

Severity severity_of(Level l) {
  switch (l) {
    case Level::kOk:
      return Severity::kInfo;
    case Level::kWarn:
      return Severity::kWarning;
    case Level::kFail:
      return Severity::kCritical;
  }
  return Severity::kCritical;
}

Level level_of(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return Level::kOk;
    case Severity::kWarning:
      return Level::kWarn;
    case Severity::kCritical:
      return Level::kFail;
  }
  return Level::kFail;
}

std::optional<Thermal> judge_temperature(unsigned temperature, std::optional<unsigned> slowdown,
                                         std::optional<unsigned> shutdown) {
  if (shutdown && temperature + kShutdownMarginC >= *shutdown) {
    return Thermal{Severity::kCritical, "near_shutdown_temperature"};
  }
  if (slowdown && temperature + kSlowdownMarginC >= *slowdown) {
    return Thermal{Severity::kWarning, "near_slowdown_temperature"};
  }
  return std::nullopt;
}

void Verdict::add(Level l, std::string code, std::string text) {
  level = std::max(level, l);
  Reason r{l, std::move(code), std::move(text)};
  auto pos =
      std::find_if(reasons.begin(), reasons.end(), [&](const Reason& x) { return x.level < l; });
  reasons.insert(pos, std::move(r));
}

Verdict judge_inventory(const nvml::GpuSnapshot& gpus, const host::HostSnapshot& h) {
  Verdict v;
  std::size_t on_bus = 0;
  if (h.pci) {
    for (const auto& d : h.pci->gpus) on_bus += host::passed_through_to_vm(d) ? 0 : 1;
  }
  if (!gpus.available) {
    if (gpus.error_kind == "library_not_found" && on_bus == 0) {
      v.add(Level::kOk, "no_nvidia_gpu", "no NVIDIA driver and no NVIDIA GPU on the PCI bus");
      return v;
    }
    std::string text = gpus.error;
    if (on_bus > 0) text += fmt::format(" ({} NVIDIA GPU(s) present on the PCI bus)", on_bus);
    v.add(Level::kFail, "nvml_" + gpus.error_kind, text);
    return v;
  }
  if (gpus.system.device_count == 0) {
    if (on_bus > 0) {
      v.add(Level::kFail, "gpus_missing",
            fmt::format("NVML lists no GPU but {} NVIDIA GPU(s) are on the PCI bus", on_bus));
    } else {
      v.add(Level::kWarn, "zero_gpus", "the NVIDIA driver is loaded but reports no GPU");
    }
  }
  if (h.pci) {
    std::set<std::string> known;
    for (const auto& g : gpus.gpus) {
      if (!g.pci_bus_id.empty()) known.insert(g.pci_bus_id);
    }
    // Only compare when NVML told us every bus id; a lost GPU may not answer.
    bool complete = known.size() == gpus.gpus.size() && !known.empty();
    for (const auto& dev : h.pci->gpus) {
      std::string id = nvml::normalize_pci_bus_id(dev.bus_id);
      if (!complete || known.count(id)) continue;
      const std::string driver = dev.driver.value_or("");
      if (host::passed_through_to_vm(dev)) continue;
      if (driver.empty()) {
        v.add(Level::kFail, "gpu_not_in_nvml",
              fmt::format("GPU at {} is on the PCI bus but NVML does not list it (no driver bound: "
                          "it may have failed to initialise)",
                          id));
      } else if (driver != "nvidia") {
        v.add(Level::kFail, "gpu_wrong_driver",
              fmt::format("GPU at {} is bound to {} instead of nvidia", id, driver));
      } else {
        v.add(Level::kFail, "gpu_not_in_nvml",
              fmt::format("GPU at {} is on the PCI bus but NVML does not list it (driver nvidia)",
                          id));
      }
    }
    if (complete && on_bus > 0 && gpus.system.device_count > on_bus) {
      v.add(Level::kWarn, "bus_scan_incomplete",
            fmt::format("NVML lists {} GPUs but only {} are visible on the PCI bus",
                        gpus.system.device_count, on_bus));
    }
  }
  const auto& kmod = h.system.nvidia_driver_version;
  if (kmod && !gpus.system.driver_version.empty() && *kmod != gpus.system.driver_version) {
    v.add(Level::kFail, "driver_version_mismatch",
          fmt::format("kernel module {} differs from the NVML library {}: the driver was "
                      "upgraded without a reboot",
                      *kmod, gpus.system.driver_version));
  }
  return v;
}

}  // namespace cardiac::health
