// SPDX-License-Identifier: Apache-2.0
// JSON form of GPU readings: the worker's wire format and the base of `status --json`.
// Absent readings are omitted, never written as 0 or null.
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "nvml/gpu.h"

namespace cardiac::nvml {

nlohmann::json to_json(const GpuReading& g);
nlohmann::json to_json(const NvmlSystem& s);
// Errors name the offending key.
Result<GpuReading> gpu_reading_from_json(const nlohmann::json& j);
Result<NvmlSystem> nvml_system_from_json(const nlohmann::json& j);
Result<DeviceHealth> device_health_from_name(std::string_view name);

}  // namespace cardiac::nvml
