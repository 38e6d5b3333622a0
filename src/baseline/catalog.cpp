// SPDX-License-Identifier: Apache-2.0
// What each fact means when it differs between two nodes of a kind: family, severity, risk.
#include <array>
#include <string>
#include <string_view>

#include "baseline/baseline.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::baseline {
namespace {

struct Entry {
  std::string_view key;  // exact key, or the part after "gpu.N." for per-GPU facts
  std::string_view family;
  Severity severity;
  std::string_view label;
  std::string_view risk;
};

// Host-wide facts, by exact key.
constexpr std::array kHostFacts{
    Entry{"driver", "driver", Severity::kCritical, "driver",
          "mixed drivers in one job hang NCCL or fail its peer-to-peer set-up, and a CUDA build "
          "that runs on one node may not load on the other"},
    Entry{"cuda", "cuda", Severity::kWarning, "CUDA driver version",
          "a job built for the newer CUDA fails to start on the older one ('driver too old')"},
    Entry{"kernel", "kernel", Severity::kWarning, "kernel",
          "the NVIDIA module is built per kernel: an untested kernel may boot without a matching "
          "module, and kernel fixes differ between nodes"},
    Entry{"os", "os", Severity::kInfo, "OS release",
          "system libraries and tools follow the release: the node drifts in everything else"},
    Entry{"library.nccl", "library", Severity::kWarning, "NCCL",
          "ranks on different NCCL versions can hang or abort when the job starts"},
    Entry{"library.cudnn", "library", Severity::kWarning, "cuDNN",
          "kernels and numerics differ: a rank computes differently or runs slower"},
    Entry{"library.cublas", "library", Severity::kWarning, "cuBLAS",
          "kernels and numerics differ: a rank computes differently or runs slower"},
    Entry{"library.nvidia-ml", "library", Severity::kWarning, "libnvidia-ml",
          "an NVML library that is not the driver's answers NVML_ERROR_LIB_RM_VERSION_MISMATCH: "
          "monitoring and nvidia-smi fail"},
    Entry{"gpu.count", "gpu", Severity::kCritical, "GPU count",
          "a job sized for the node's GPUs does not fit, or a GPU is missing"},
    Entry{"numa.nodes", "numa", Severity::kWarning, "NUMA nodes",
          "another NUMA layout (a BIOS setting) changes memory bandwidth and which CPUs are near "
          "which GPU"},
    Entry{"iommu.cmdline", "iommu", Severity::kWarning, "IOMMU boot parameters",
          "an IOMMU that translates (not iommu=pt) slows or breaks GPUDirect RDMA and "
          "peer-to-peer copies"},
    Entry{"iommu.units", "iommu", Severity::kWarning, "IOMMU units",
          "an IOMMU on one node only changes DMA paths: GPUDirect RDMA and peer-to-peer copies "
          "behave differently"},
    Entry{"sysctl.vm.swappiness", "kernel_params", Severity::kInfo, "vm.swappiness",
          "the node swaps sooner or later than its peers under memory pressure"},
    Entry{"sysctl.kernel.numa_balancing", "kernel_params", Severity::kWarning,
          "kernel.numa_balancing",
          "automatic NUMA balancing moves a running job's pages: jitter its peers do not have"},
    Entry{"sysctl.vm.zone_reclaim_mode", "kernel_params", Severity::kWarning,
          "vm.zone_reclaim_mode",
          "zone reclaim drops page cache to keep memory local: I/O stalls its peers do not have"},
    Entry{"sysctl.net.core.rmem_max", "kernel_params", Severity::kInfo, "net.core.rmem_max",
          "socket buffer limits cap TCP throughput (NCCL over sockets, data loading)"},
    Entry{"sysctl.net.core.wmem_max", "kernel_params", Severity::kInfo, "net.core.wmem_max",
          "socket buffer limits cap TCP throughput (NCCL over sockets, data loading)"},
    Entry{"hugepages.total", "hugepages", Severity::kInfo, "huge pages reserved",
          "a job that maps huge pages fails or falls back to small pages here"},
    Entry{"hugepages.size_kb", "hugepages", Severity::kInfo, "huge page size (kB)",
          "a job that maps huge pages fails or falls back to small pages here"},
    Entry{"hugepages.transparent", "hugepages", Severity::kInfo, "transparent huge pages",
          "memory latency and compaction stalls differ from its peers"},
    Entry{"cpu.governor", "cpu_governor", Severity::kWarning, "CPU frequency governor",
          "a power-saving governor slows the CPU side (data loading, kernel launches) on this node "
          "only: a straggler"},
};

// Per-GPU facts, by the part after "gpu.N.".
constexpr std::array kGpuFacts{
    Entry{"name", "gpu", Severity::kWarning, "model",
          "another GPU model in one job runs at its own speed and memory size: the slowest card "
          "sets the pace"},
    Entry{"persistence", "gpu_mode", Severity::kWarning, "persistence mode",
          "without persistence the driver tears down between jobs: first calls take seconds and "
          "settings such as clocks reset"},
    Entry{"ecc", "gpu_mode", Severity::kWarning, "ECC mode",
          "with ECC off memory errors corrupt results unseen, and the usable memory differs"},
    Entry{"mig", "gpu_mode", Severity::kCritical, "MIG mode",
          "a GPU in MIG mode shows only its instances: a job that expects the whole GPU fails"},
    Entry{"power_limit_w", "power_limit", Severity::kWarning, "power limit (W)",
          "a lower power limit makes this GPU a straggler: every synchronous job runs at its "
          "speed"},
    Entry{"clocks_max", "clocks", Severity::kWarning, "maximum clocks (SM/memory MHz)",
          "other maximum clocks (another SKU or VBIOS) make this GPU a straggler"},
    Entry{"app_clocks", "clocks", Severity::kWarning, "application clocks (graphics/memory MHz)",
          "the GPU runs its kernels at other clocks than its peers: lower ones make it a "
          "straggler, and a synchronous job runs at the pace of its slowest GPU"},
    Entry{"app_clocks_default", "clocks", Severity::kInfo,
          "default application clocks (graphics/memory MHz)",
          "another part or VBIOS: resetting the clocks (`nvidia-smi -rac`) gives this GPU other "
          "clocks than its peers"},
    Entry{"pcie", "pcie", Severity::kWarning, "PCIe link (maximum)",
          "an older or narrower link slows host-GPU copies and GPUDirect: often the wrong slot "
          "or a riser"},
    Entry{"numa_node", "numa", Severity::kWarning, "NUMA node",
          "the GPU hangs off another socket than on its peers: CPU affinity copied from them "
          "(Slurm Cores=, numactl) is wrong here"},
};

}  // namespace

const std::vector<std::string_view>& families() {
  static const std::vector<std::string_view> kFamilies{
      "driver", "cuda",     "kernel",        "os",        "library",
      "gpu",    "gpu_mode", "power_limit",   "clocks",    "pcie",
      "numa",   "iommu",    "kernel_params", "hugepages", "cpu_governor"};
  return kFamilies;
}

FactInfo fact_info(std::string_view key) {
  for (const auto& e : kHostFacts) {
    if (e.key == key) {
      return {std::string(e.family), e.severity, std::string(e.label), std::string(e.risk), {}};
    }
  }
  if (starts_with(key, "gpu.")) {
    auto parts = split(key, '.');
    if (parts.size() == 3) {
      if (auto index = parse_u64(parts[1])) {
        for (const auto& e : kGpuFacts) {
          if (e.key == parts[2]) {
            return {std::string(e.family), e.severity, fmt::format("GPU {} {}", *index, e.label),
                    std::string(e.risk), static_cast<unsigned>(*index)};
          }
        }
      }
    }
  }
  if (starts_with(key, "library.")) {
    return {"library",
            Severity::kWarning,
            std::string(key.substr(8)),
            "library versions that differ between ranks change results and can break a job",
            {}};
  }
  if (starts_with(key, "cmdline.")) {
    return {"kernel_params",
            Severity::kInfo,
            fmt::format("kernel parameter {}", key.substr(8)),
            "a boot parameter on one node only changes its power states, PCIe or memory "
            "behaviour against its peers",
            {}};
  }
  if (starts_with(key, "sysctl.")) {
    return {"kernel_params",
            Severity::kInfo,
            std::string(key.substr(7)),
            "a kernel setting on one node only changes its behaviour against its peers",
            {}};
  }
  return {"other", Severity::kInfo, std::string(key), "the nodes differ", {}};
}

Fact make_fact(std::string key, std::optional<std::string> value, std::string source) {
  FactInfo info = fact_info(key);
  Fact f;
  f.key = std::move(key);
  f.value = std::move(value);
  f.source = std::move(source);
  f.family = std::move(info.family);
  f.severity = info.severity;
  f.risk = std::move(info.risk);
  return f;
}

const Fact* Baseline::find(std::string_view key) const {
  for (const auto& f : facts) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

}  // namespace cardiac::baseline
