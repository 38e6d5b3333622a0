// SPDX-License-Identifier: Apache-2.0
// Memory of common GPUs, for planning on a machine that does not have them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/inference.h"

namespace cardiac::plan {

// "H100-80GB", "A100-40GB", … (case-insensitive); total and free are the memory NVML reports
// for the card.
std::optional<GpuMemory> find_gpu(std::string_view name);
std::vector<std::string> gpu_names();

}  // namespace cardiac::plan
