// SPDX-License-Identifier: Apache-2.0
// Reads a node's baseline facts from its files (through the FileSystem seam, so a captured
// tree works) and one NVML sample.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/capture_util.h"
#include "core/format.h"
#include "core/strings.h"
#include "host/pci.h"
#include "host/system.h"

namespace cardiac::baseline {
namespace {

using Facts = std::vector<Fact>;

std::string on_off(bool b) {
  return b ? "on" : "off";
}

void add(Facts& out, std::string key, std::optional<std::string> value, std::string source) {
  out.push_back(make_fact(std::move(key), std::move(value), std::move(source)));
}

void capture_versions(const FileSystem& fs, const nvml::GpuSnapshot* gpus, Facts& out) {
  std::vector<std::string> errors;
  host::SystemInfo sys = host::collect_system_info(fs, &errors);
  const bool nvml_ok = gpus != nullptr && gpus->available;
  if (sys.nvidia_driver_version) {
    add(out, "driver", sys.nvidia_driver_version, "/proc/driver/nvidia/version");
  } else if (nvml_ok && !gpus->system.driver_version.empty()) {
    add(out, "driver", gpus->system.driver_version, "nvml");
  } else {
    add(out, "driver", std::nullopt,
        "could not read /proc/driver/nvidia/version, and NVML did not say");
  }
  if (nvml_ok && gpus->system.cuda_driver_version) {
    const int v = *gpus->system.cuda_driver_version;
    add(out, "cuda", fmt::format("{}.{}", v / 1000, (v % 1000) / 10), "nvml");
  } else {
    add(out, "cuda", std::nullopt, nvml_unread_reason(gpus));
  }
  if (sys.kernel) {
    add(out, "kernel", sys.kernel, "/proc/sys/kernel/osrelease");
  } else {
    add(out, "kernel", std::nullopt, "could not read /proc/sys/kernel/osrelease or /proc/version");
  }
  add_os_release(fs, out);
}

void capture_gpus(const FileSystem& fs, const nvml::GpuSnapshot* gpus, Facts& out) {
  auto pci = host::collect_nvidia_pci(fs);
  std::map<std::string, const host::PciDevice*> by_bus;
  if (pci) {
    for (const auto& d : pci->gpus) by_bus[d.bus_id] = &d;
  }
  const bool nvml_ok = gpus != nullptr && gpus->available;
  const std::string why_not = nvml_unread_reason(gpus);

  // NVML's order when it answered; the PCI bus order (NVML's default) when it did not.
  struct Gpu {
    const nvml::GpuReading* nvml = nullptr;
    const host::PciDevice* pci = nullptr;
  };
  std::vector<Gpu> list;
  if (nvml_ok) {
    for (const auto& g : gpus->gpus) {
      auto it = by_bus.find(to_lower(g.pci_bus_id));
      list.push_back({&g, it == by_bus.end() ? nullptr : it->second});
    }
    add(out, "gpu.count", std::to_string(list.size()), "nvml");
  } else if (pci && !pci->gpus.empty()) {
    for (const auto& d : pci->gpus) list.push_back({nullptr, &d});
    add(out, "gpu.count", std::to_string(list.size()), "/sys/bus/pci/devices");
  } else {
    add(out, "gpu.count", pci ? std::optional<std::string>("0") : std::nullopt,
        pci ? "/sys/bus/pci/devices" : why_not);
  }

  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto* g = list[i].nvml;
    const auto* d = list[i].pci;
    const std::string p = fmt::format("gpu.{}.", g != nullptr ? g->index : i);
    auto from_nvml = [&](const std::string& name, std::optional<std::string> v) {
      if (g == nullptr) {
        add(out, p + name, std::nullopt, why_not);
      } else if (g->health != nvml::DeviceHealth::kOk) {
        add(out, p + name, std::nullopt,
            fmt::format("NVML: GPU {}", nvml::device_health_name(g->health)));
      } else {
        add(out, p + name, v ? std::move(v) : std::optional<std::string>("not supported"), "nvml");
      }
    };
    // A value NVML refused to give (NO_PERMISSION, …) is not read, never "not supported".
    auto from_nvml_call = [&](const std::string& name, std::string_view call,
                              std::optional<std::string> v) {
      if (g != nullptr && g->health == nvml::DeviceHealth::kOk) {
        auto err = g->call_errors.find(std::string(call));
        if (err != g->call_errors.end()) {
          add(out, p + name, std::nullopt, fmt::format("NVML: {} returned {}", call, err->second));
          return;
        }
      }
      from_nvml(name, std::move(v));
    };
    auto opt_bool = [&](std::optional<bool> b) {
      return b ? std::optional<std::string>(on_off(*b)) : std::nullopt;
    };
    from_nvml("name", g != nullptr && !g->name.empty() ? std::optional(g->name) : std::nullopt);
    from_nvml("persistence", g != nullptr ? opt_bool(g->persistence_mode) : std::nullopt);
    from_nvml("ecc", g != nullptr ? opt_bool(g->ecc_enabled) : std::nullopt);
    from_nvml("mig", g != nullptr ? opt_bool(g->mig_mode) : std::nullopt);
    from_nvml("power_limit_w",
              g != nullptr && g->power_limit_mw
                  ? std::optional(fmt::format("{}", (*g->power_limit_mw + 500) / 1000))
                  : std::nullopt);
    from_nvml("clocks_max",
              g != nullptr && g->clock_sm_max_mhz && g->clock_mem_max_mhz
                  ? std::optional(fmt::format("{}/{}", *g->clock_sm_max_mhz, *g->clock_mem_max_mhz))
                  : std::nullopt);
    // Application clocks, graphics/memory like the two above: what `nvidia-smi -ac` set, and
    // the part's defaults, which tell a node whose clocks were lowered from a slower part.
    auto pair = [](std::optional<unsigned> a, std::optional<unsigned> b) {
      return a && b ? std::optional(fmt::format("{}/{}", *a, *b)) : std::nullopt;
    };
    from_nvml_call(
        "app_clocks", "nvmlDeviceGetApplicationsClock",
        g != nullptr ? pair(g->app_clock_graphics_mhz, g->app_clock_memory_mhz) : std::nullopt);
    from_nvml_call("app_clocks_default", "nvmlDeviceGetDefaultApplicationsClock",
                   g != nullptr
                       ? pair(g->default_app_clock_graphics_mhz, g->default_app_clock_memory_mhz)
                       : std::nullopt);

    // PCIe: NVML's maximum generation and width, else the slot's in sysfs.
    if (g != nullptr && g->pcie_gen_max && g->pcie_width_max) {
      add(out, p + "pcie", fmt::format("gen{}x{}", *g->pcie_gen_max, *g->pcie_width_max), "nvml");
    } else if (d != nullptr && d->max_link_gts && d->max_link_width) {
      auto gen = host::pcie_generation(*d->max_link_gts);
      add(out, p + "pcie",
          gen ? std::optional(fmt::format("gen{}x{}", *gen, *d->max_link_width)) : std::nullopt,
          fmt::format("/sys/bus/pci/devices/{}/max_link_*", d->bus_id));
    } else {
      add(out, p + "pcie", std::nullopt, "neither NVML nor sysfs gave the link");
    }
    if (d != nullptr) {
      add(out, p + "numa_node", d->numa_node ? std::to_string(*d->numa_node) : "none",
          fmt::format("/sys/bus/pci/devices/{}/numa_node", d->bus_id));
    } else {
      add(out, p + "numa_node", std::nullopt, "the GPU is not in /sys/bus/pci/devices");
    }
  }
}

}  // namespace

Baseline capture(const FileSystem& fs, const nvml::GpuSnapshot* gpus, TimeNs now) {
  Baseline b;
  b.taken_at = now;
  std::vector<std::string> errors;
  b.hostname = host::collect_system_info(fs, &errors).hostname.value_or("");
  capture_versions(fs, gpus, b.facts);
  add_libraries(fs, b.facts);
  capture_gpus(fs, gpus, b.facts);
  add_host_settings(fs, b.facts);
  std::sort(b.facts.begin(), b.facts.end(),
            [](const Fact& x, const Fact& y) { return key_less(x.key, y.key); });
  return b;
}

}  // namespace cardiac::baseline
