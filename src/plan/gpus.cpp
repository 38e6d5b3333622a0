// SPDX-License-Identifier: Apache-2.0
#include "plan/gpus.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace cardiac::plan {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

struct GpuSpec {
  const char* name;
  std::uint64_t mib;  // nvmlDeviceGetMemoryInfo's total, in MiB
  double tflops;      // dense bf16 tensor TFLOP/s (datasheet; V100: fp16, it has no bf16)
  double tb_s;        // HBM/GDDR bandwidth, TB/s (datasheet)
};

// Throughput and bandwidth are the vendors' published datasheet figures for the SXM/OAM part
// where there are several (H100 SXM5, H100 NVL for the 94 GB card, H200 SXM, HGX B200, A100
// SXM4, V100 SXM2, MI300X OAM), dense: NVIDIA's headline tensor figures count 2:4 sparsity
// and are halved here. GeForce cards: bf16 with fp32 accumulate (Ada and Ampere whitepapers).
constexpr GpuSpec kGpus[] = {
    {"H100-80GB", 81559, 989.4, 3.35}, {"H100-94GB", 95830, 835.5, 3.9},
    {"H200", 143771, 989.4, 4.8},      {"B200", 183359, 2250, 7.7},
    {"A100-40GB", 40960, 312, 1.555},  {"A100-80GB", 81920, 312, 2.039},
    {"L40S", 46068, 362.05, 0.864},    {"L40", 46068, 181.05, 0.864},
    {"L4", 23034, 121, 0.3},           {"A10", 23028, 125, 0.6},
    {"RTX4090", 24564, 165.2, 1.008},  {"RTX3090", 24576, 71, 0.936},
    {"V100-16GB", 16384, 125, 0.9},    {"V100-32GB", 32768, 125, 0.9},
    {"MI300X", 196592, 1307.4, 5.3},
};

std::string lower(std::string_view s) {
  std::string r(s);
  std::ranges::transform(r, r.begin(), [](unsigned char c) { return std::tolower(c); });
  return r;
}

}  // namespace

std::optional<GpuMemory> find_gpu(std::string_view name) {
  const std::string want = lower(name);
  for (const auto& g : kGpus) {
    if (lower(g.name) == want) {
      return GpuMemory{g.name, g.mib * kMiB, g.mib * kMiB};
    }
  }
  return std::nullopt;
}

std::optional<GpuPerf> find_gpu_perf(std::string_view name) {
  const std::string want = lower(name);
  for (const auto& g : kGpus) {
    if (lower(g.name) == want) return GpuPerf{g.name, g.mib * kMiB, g.tflops * 1e12, g.tb_s * 1e12};
  }
  return std::nullopt;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : kGpus) names.emplace_back(g.name);
  return names;
}

}  // namespace cardiac::plan
