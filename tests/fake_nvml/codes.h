// SPDX-License-Identifier: Apache-2.0
// NVML return-code names (as written in scenario files) and nvmlErrorString texts.
#pragma once

#include <optional>
#include <string_view>

namespace fake {

// "GPU_IS_LOST", "NVML_ERROR_GPU_IS_LOST", "SUCCESS", "NVML_SUCCESS" → the code; nullopt when
// the name is not an NVML return code.
std::optional<int> code_from_name(std::string_view name);

// The text real NVML's nvmlErrorString gives ("GPU is lost"); "Unknown Error" for unknown codes.
const char* error_text(int code);

}  // namespace fake
