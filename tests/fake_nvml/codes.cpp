// SPDX-License-Identifier: Apache-2.0
// NVML return-code names and texts, kept in one table so names and texts cannot disagree.
#include "codes.h"

#include <array>

namespace fake {
namespace {

struct CodeInfo {
  int code;
  std::string_view name;
  const char* text;
};

// Texts follow libnvidia-ml's nvmlErrorString so that messages built from them read the same
// as on a real machine.
constexpr std::array kCodes{
    CodeInfo{0, "SUCCESS", "Success"},
    CodeInfo{1, "UNINITIALIZED", "Uninitialized"},
    CodeInfo{2, "INVALID_ARGUMENT", "Invalid Argument"},
    CodeInfo{3, "NOT_SUPPORTED", "Not Supported"},
    CodeInfo{4, "NO_PERMISSION", "Insufficient Permissions"},
    CodeInfo{5, "ALREADY_INITIALIZED", "Already Initialized"},
    CodeInfo{6, "NOT_FOUND", "Not Found"},
    CodeInfo{7, "INSUFFICIENT_SIZE", "Insufficient Size"},
    CodeInfo{8, "INSUFFICIENT_POWER", "Insufficient External Power"},
    CodeInfo{9, "DRIVER_NOT_LOADED", "Driver Not Loaded"},
    CodeInfo{10, "TIMEOUT", "Timeout"},
    CodeInfo{11, "IRQ_ISSUE", "Interrupt request issue"},
    CodeInfo{12, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    CodeInfo{13, "FUNCTION_NOT_FOUND", "Function Not Found"},
    CodeInfo{14, "CORRUPTED_INFOROM", "Corrupted infoROM"},
    CodeInfo{15, "GPU_IS_LOST", "GPU is lost"},
    CodeInfo{16, "RESET_REQUIRED", "GPU requires restart"},
    CodeInfo{17, "OPERATING_SYSTEM", "The operating system has blocked the request."},
    CodeInfo{18, "LIB_RM_VERSION_MISMATCH", "RM has detected an NVML/RM version mismatch."},
    CodeInfo{19, "IN_USE", "In use by another client"},
    CodeInfo{20, "MEMORY", "Insufficient Memory"},
    CodeInfo{21, "NO_DATA", "No data"},
    CodeInfo{22, "VGPU_ECC_NOT_SUPPORTED",
             "The requested vgpu operation is not available on target device, because ECC is "
             "enabled"},
    CodeInfo{23, "INSUFFICIENT_RESOURCES", "Ran out of critical resources, other than memory"},
    CodeInfo{24, "FREQ_NOT_SUPPORTED", "The requested frequency is not supported"},
    CodeInfo{25, "ARGUMENT_VERSION_MISMATCH", "Argument version mismatch"},
    CodeInfo{26, "DEPRECATED", "Function is deprecated"},
    CodeInfo{27, "NOT_READY", "Not ready"},
    CodeInfo{28, "GPU_NOT_FOUND", "GPU not found"},
    CodeInfo{29, "INVALID_STATE", "Invalid state"},
    CodeInfo{30, "RESET_TYPE_NOT_SUPPORTED", "Reset type not supported"},
    CodeInfo{999, "UNKNOWN", "Unknown Error"},
};

}  // namespace

std::optional<int> code_from_name(std::string_view name) {
  for (std::string_view prefix : {"NVML_ERROR_", "NVML_"}) {
    if (name.substr(0, prefix.size()) == prefix) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  for (const auto& c : kCodes) {
    if (c.name == name) return c.code;
  }
  return std::nullopt;
}

const char* error_text(int code) {
  for (const auto& c : kCodes) {
    if (c.code == code) return c.text;
  }
  return "Unknown Error";
}

}  // namespace fake
