// SPDX-License-Identifier: Apache-2.0
// The node's configuration facts (src/baseline) as the labels of two info metrics,
// cardiac_node_config_info and cardiac_gpu_config_info, so that a Prometheus rule can find the
// node whose driver, kernel or GPU settings differ from its peers' (docs/metrics.md).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baseline/baseline.h"

namespace cardiac::metrics {

struct ConfigLabels {
  // label → value, in output order; facts not read are left out (absent, never "").
  std::vector<std::pair<std::string, std::string>> node;
  std::map<unsigned, std::vector<std::pair<std::string, std::string>>> gpus;  // by NVML index
  bool operator==(const ConfigLabels&) const = default;
};

// The label names of each metric, after hostname (node) or the GPU labels (per GPU).
const std::vector<std::pair<std::string_view, std::string_view>>& node_config_labels();
const std::vector<std::pair<std::string_view, std::string_view>>& gpu_config_labels();

[[nodiscard]] ConfigLabels config_labels(const baseline::Baseline& b);

}  // namespace cardiac::metrics
