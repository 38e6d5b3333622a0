// SPDX-License-Identifier: Apache-2.0
// Memory, dense bf16 throughput and HBM bandwidth of common GPUs, for planning on a machine that
// does not have them and for the roofline of `cardiac sim serve`.
#pragma once

#include <cstdint>
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

// What the serving simulator's roofline needs of a card: vendor datasheet figures, dense (the
// "with sparsity" figures are twice these) bf16 tensor-core FLOP/s and HBM bytes/s.
struct GpuPerf {
  std::string name;
  std::uint64_t memory = 0;  // as find_gpu's total
  double bf16_flops = 0;
  double hbm_bytes_per_s = 0;
};
std::optional<GpuPerf> find_gpu_perf(std::string_view name);

}  // namespace cardiac::plan
