// SPDX-License-Identifier: Apache-2.0
// NVIDIA GPUs on the PCI bus (/sys/bus/pci/devices), independent of the driver and NVML.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

constexpr std::uint32_t kPciVendorNvidia = 0x10de;

// One PCI function. Link fields are absent when sysfs does not offer them or reads
// "Unknown"; a width of 0 is kept, as it is what a dead link reports.
struct PciDevice {
  std::string bus_id;  // "0000:18:00.0", the sysfs directory name
  std::uint32_t vendor = 0;
  std::uint32_t device = 0;
  std::uint32_t class_code = 0;            // 24 bits: class, subclass, prog-if (0x030200)
  std::optional<std::string> driver;       // bound driver ("nvidia", "vfio-pci"); absent if unbound
  std::optional<double> current_link_gts;  // GT/s per lane: 2.5, 5, 8, 16, 32, 64
  std::optional<double> max_link_gts;
  std::optional<unsigned> current_link_width;  // lanes
  std::optional<unsigned> max_link_width;
  std::optional<int> numa_node;  // the slot's NUMA node; absent when sysfs says -1 (none known)
};

struct PciScan {
  std::vector<PciDevice> gpus;          // NVIDIA display/3D controllers, sorted by bus id
  unsigned other_nvidia_functions = 0;  // audio, USB, NVSwitch (0x0680), bridges
};

// True for display controllers: VGA (0x0300xx) and 3D (0x0302xx).
[[nodiscard]] bool is_gpu_class(std::uint32_t class_code);

// True for a device bound to vfio-pci or pci-stub: handed to a virtual machine on purpose, so
// not this host's to drive (the names are those of the Linux drivers).
[[nodiscard]] bool passed_through_to_vm(const PciDevice& d);

// Parses a sysfs hex id ("0x10de\n"); an error for anything else.
[[nodiscard]] Result<std::uint32_t> parse_pci_hex(std::string_view text);

// Parses "32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s"; nullopt for "Unknown" or garbage.
[[nodiscard]] std::optional<double> parse_pci_link_speed(std::string_view text);

// The PCIe generation of a per-lane rate: 2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5,
// 64 -> 6; nullopt for any other rate.
[[nodiscard]] std::optional<int> pcie_generation(double gts);

// Scans /sys/bus/pci/devices for vendor 0x10de. A function whose vendor or class cannot be
// read is skipped (it may be going away). A missing devices directory is a kNotFound error.
[[nodiscard]] Result<PciScan> collect_nvidia_pci(const FileSystem& fs);

}  // namespace cardiac::host
