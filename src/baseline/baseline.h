// SPDX-License-Identifier: Apache-2.0
// A node's configuration baseline: the facts that should be the same on every node of a kind
// (driver, CUDA, kernel, OS, key libraries, per-GPU modes and limits, NUMA, IOMMU, kernel
// parameters, huge pages, CPU governor), read through the FileSystem seam and an NVML sample,
// saved as `cardiac.baseline/v1` JSON (docs/baseline.md) and compared with another node.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "core/severity.h"
#include "nvml/gpu.h"
#include "platform/fs.h"

namespace cardiac::baseline {

inline constexpr std::string_view kSchema = "cardiac.baseline/v1";
// The value of a library that is not installed: a fact, not a failure to read.
inline constexpr std::string_view kAbsent = "absent";

// What a fact's key says about it when it differs: the drift family (the doctor's finding id
// is "drift.<family>"), how much a difference matters, a short label and the risk.
struct FactInfo {
  std::string family{};  // "driver", "library", "gpu_mode", …
  Severity severity = Severity::kInfo;
  std::string label{};            // "NVIDIA driver", "GPU 3 power limit (W)"
  std::string risk{};             // why a difference matters
  std::optional<unsigned> gpu{};  // per-GPU facts: the GPU index
};

// What is known about a key: from the catalog (catalog.cpp); unknown keys are family
// "other", severity info.
[[nodiscard]] FactInfo fact_info(std::string_view key);
// Every family, in the order the docs list them.
[[nodiscard]] const std::vector<std::string_view>& families();

struct Fact {
  std::string key{};                 // "driver", "library.nccl", "gpu.0.power_limit_w"
  std::optional<std::string> value;  // unset: could not be read (`source` says why)
  std::string source{};              // where it was read, or why it could not be
  std::string family{};              // from fact_info(key), or as the file says
  Severity severity = Severity::kInfo;
  std::string risk{};
  bool operator==(const Fact&) const = default;
};

struct Baseline {
  std::string schema{kSchema};
  std::string hostname{};
  TimeNs taken_at = 0;
  std::vector<Fact> facts{};  // sorted by key
  [[nodiscard]] const Fact* find(std::string_view key) const;
  bool operator==(const Baseline&) const = default;
};

// A fact named by `key` with its catalog entry filled in.
[[nodiscard]] Fact make_fact(std::string key, std::optional<std::string> value, std::string source);

// Reads this host's facts: files through `fs`, GPU facts from `gpus` (nullptr or an
// unavailable sample: the GPU facts NVML alone knows are unset, saying why). Never fails.
[[nodiscard]] Baseline capture(const FileSystem& fs, const nvml::GpuSnapshot* gpus, TimeNs now);

// One difference between the baseline and this host.
struct Difference {
  std::string key{};
  std::string family{};
  Severity severity = Severity::kInfo;
  std::string label{};
  std::string risk{};
  std::optional<unsigned> gpu{};
  std::optional<std::string> expected;  // the baseline's value; unset: not in the baseline
  std::optional<std::string> here;      // this host's; unset: not read or not present here
  bool unreadable = false;              // the key exists here but could not be read
  std::string source{};                 // this host's source or why not
  // "driver 535.104.05 here, 550.54.15 in the baseline: mixed drivers …"
  [[nodiscard]] std::string sentence() const;
};

// Every difference between `expected` (the baseline file) and `here`, in key order. Facts the
// baseline could not read are not compared; facts this host could not read are differences
// with `unreadable` set.
[[nodiscard]] std::vector<Difference> compare(const Baseline& expected, const Baseline& here);

}  // namespace cardiac::baseline
