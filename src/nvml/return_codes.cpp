// SPDX-License-Identifier: Apache-2.0
// Return code names.
#include "nvml/return_codes.h"

#include <array>
#include <utility>

#include "core/strings.h"

namespace cardiac::nvml {
namespace {

constexpr std::array<std::pair<int, std::string_view>, 32> kNames{{
    {kSuccess, "SUCCESS"},
    {kUninitialized, "UNINITIALIZED"},
    {kInvalidArgument, "INVALID_ARGUMENT"},
    {kNotSupported, "NOT_SUPPORTED"},
    {kNoPermission, "NO_PERMISSION"},
    {kAlreadyInitialized, "ALREADY_INITIALIZED"},
    {kNotFound, "NOT_FOUND"},
    {kInsufficientSize, "INSUFFICIENT_SIZE"},
    {kInsufficientPower, "INSUFFICIENT_POWER"},
    {kDriverNotLoaded, "DRIVER_NOT_LOADED"},
    {kTimeout, "TIMEOUT"},
    {kIrqIssue, "IRQ_ISSUE"},
    {kLibraryNotFound, "LIBRARY_NOT_FOUND"},
    {kFunctionNotFound, "FUNCTION_NOT_FOUND"},
    {kCorruptedInforom, "CORRUPTED_INFOROM"},
    {kGpuIsLost, "GPU_IS_LOST"},
    {kResetRequired, "RESET_REQUIRED"},
    {kOperatingSystem, "OPERATING_SYSTEM"},
    {kLibRmVersionMismatch, "LIB_RM_VERSION_MISMATCH"},
    {kInUse, "IN_USE"},
    {kMemory, "MEMORY"},
    {kNoData, "NO_DATA"},
    {kVgpuEccNotSupported, "VGPU_ECC_NOT_SUPPORTED"},
    {kInsufficientResources, "INSUFFICIENT_RESOURCES"},
    {kFreqNotSupported, "FREQ_NOT_SUPPORTED"},
    {kArgumentVersionMismatch, "ARGUMENT_VERSION_MISMATCH"},
    {kDeprecated, "DEPRECATED"},
    {kNotReady, "NOT_READY"},
    {kGpuNotFound, "GPU_NOT_FOUND"},
    {kInvalidState, "INVALID_STATE"},
    {kResetTypeNotSupported, "RESET_TYPE_NOT_SUPPORTED"},
    {kUnknown, "UNKNOWN"},
}};

}  // namespace

std::string_view return_code_name(nvmlReturn_t rc) {
  for (const auto& [code, name] : kNames) {
    if (code == rc) return name;
  }
  return "UNKNOWN";
}

nvmlReturn_t return_code_from_name(std::string_view name) {
  name = trim(name);
  if (name.starts_with("NVML_ERROR_")) name.remove_prefix(11);
  if (name.starts_with("NVML_")) name.remove_prefix(5);
  for (const auto& [code, n] : kNames) {
    if (n == name) return code;
  }
  return -1;
}

bool is_device_fatal(nvmlReturn_t rc) {
  return rc == kGpuIsLost || rc == kResetRequired || rc == kUnknown;
}

}  // namespace cardiac::nvml
