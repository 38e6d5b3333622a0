// SPDX-License-Identifier: Apache-2.0
// Names and meanings of NVML return codes, and how each one bears on a device's health.
#pragma once

#include <string_view>

#include "nvml/types.h"

namespace cardiac::nvml {

// "GPU_IS_LOST", "NOT_SUPPORTED", … (the nvml.h name without NVML_ERROR_); "UNKNOWN_<n>" style
// names are never returned: unknown values map to "UNKNOWN".
std::string_view return_code_name(nvmlReturn_t rc);
// Parses a name as written by return_code_name (also accepts "NVML_ERROR_" prefixes and
// "SUCCESS"); returns -1 when the name is not known.
nvmlReturn_t return_code_from_name(std::string_view name);

// True for codes that say the device itself is unusable (lost, reset required, unknown error,
// corrupted inforom is not one of them: that is a warning).
bool is_device_fatal(nvmlReturn_t rc);

}  // namespace cardiac::nvml
