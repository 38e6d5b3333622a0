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
};

constexpr GpuSpec kGpus[] = {
    {"H100-80GB", 81559}, {"H100-94GB", 95830}, {"H200", 143771},   {"B200", 183359},
    {"A100-40GB", 40960}, {"A100-80GB", 81920}, {"L40S", 46068},    {"L40", 46068},
    {"L4", 23034},        {"A10", 23028},       {"RTX4090", 24564}, {"RTX3090", 24576},
    {"V100-16GB", 16384}, {"V100-32GB", 32768}, {"MI300X", 196592},
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

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : kGpus) names.emplace_back(g.name);
  return names;
}

}  // namespace cardiac::plan
