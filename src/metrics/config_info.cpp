// SPDX-License-Identifier: Apache-2.0
#include "metrics/config_info.h"

#include "core/format.h"
#include "metrics/registry.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {

// (label, baseline key): a few facts that tell nodes of a kind apart; the rest stay with
// `cardiac doctor --baseline`, since every label value is a series of its own.
const std::vector<std::pair<std::string_view, std::string_view>>& node_config_labels() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kLabels{
      {"driver", "driver"},         {"cuda", "cuda"},
      {"kernel", "kernel"},         {"os", "os"},
      {"nccl", "library.nccl"},     {"cudnn", "library.cudnn"},
      {"cublas", "library.cublas"}, {"nvidia_ml", "library.nvidia-ml"},
      {"gpus", "gpu.count"},        {"numa_nodes", "numa.nodes"},
      {"iommu", "iommu.cmdline"},   {"cpu_governor", "cpu.governor"},
  };
  return kLabels;
}

// (label, the part of the key after "gpu.N.").
const std::vector<std::pair<std::string_view, std::string_view>>& gpu_config_labels() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kLabels{
      {"persistence", "persistence"},
      {"ecc", "ecc"},
      {"mig", "mig"},
      {"power_limit_w", "power_limit_w"},
      {"clocks_max", "clocks_max"},
      {"app_clocks", "app_clocks"},
      {"pcie", "pcie"},
      {"numa_node", "numa_node"},
  };
  return kLabels;
}

std::vector<MetricDef> config_metric_rows() {
  return {
      {.name = "cardiac_node_config_info",
       .help = "1, with the node's configuration facts as labels (driver, CUDA, kernel, OS, "
               "library versions, GPU count, NUMA nodes, IOMMU boot parameters, CPU governor); "
               "read when the agent starts and on reload. A value held by fewer nodes than the "
               "others' is the odd node out (docs/metrics.md).",
       .scope = Scope::kNodeConfig,
       .source = "baseline::capture (src/baseline): host files and the first NVML sample"},
      {.name = "cardiac_gpu_config_info",
       .help = "1 per GPU, with its configuration facts as labels (persistence, ECC and MIG "
               "mode, power limit in W, maximum and application SM/memory clocks in MHz, PCIe "
               "generation and width, NUMA node); read when the agent starts and on reload.",
       .scope = Scope::kGpuConfig,
       .source = "baseline::capture (src/baseline): NVML and /sys/bus/pci"},
  };
}

ConfigLabels config_labels(const baseline::Baseline& b) {
  ConfigLabels c;
  for (const auto& [label, key] : node_config_labels()) {
    const baseline::Fact* f = b.find(key);
    if (f != nullptr && f->value) c.node.emplace_back(label, *f->value);
  }
  for (const auto& f : b.facts) {
    auto info = baseline::fact_info(f.key);
    if (!info.gpu) continue;
    auto& labels = c.gpus[*info.gpu];
    if (!f.value) continue;
    for (const auto& [label, suffix] : gpu_config_labels()) {
      if (f.key == fmt::format("gpu.{}.{}", *info.gpu, suffix))
        labels.emplace_back(label, *f.value);
    }
  }
  // Output order follows the label table, not the key order of the baseline.
  for (auto& [index, labels] : c.gpus) {
    std::vector<std::pair<std::string, std::string>> ordered;
    for (const auto& [label, suffix] : gpu_config_labels()) {
      for (const auto& l : labels) {
        if (l.first == label) ordered.push_back(l);
      }
    }
    labels = std::move(ordered);
  }
  return c;
}

}  // namespace cardiac::metrics
