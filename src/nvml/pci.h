// SPDX-License-Identifier: Apache-2.0
// PCI bus id normalisation shared by NVML readings, sysfs and kernel-log parsing.
#pragma once

#include <string>
#include <string_view>

namespace cardiac::nvml {

// "00000000:3B:00.0", "0000:3b:00.0" and "3b:00.0" all become "0000:3b:00.0" (lower-case hex,
// 4-digit domain). Input that is not a bus id is returned lower-cased and otherwise unchanged.
std::string normalize_pci_bus_id(std::string_view id);

}  // namespace cardiac::nvml
