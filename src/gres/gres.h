// SPDX-License-Identifier: Apache-2.0
// Slurm's gres.conf for this node from what NVML sees: one line per GPU with its type, device
// file, the cores near it and its NVLinks to the other GPUs, plus the slurm.conf NodeName
// line. Pure over a GPU snapshot and the rooted file system (sysfs), so tests use fixtures.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "nvml/gpu.h"
#include "platform/fs.h"

namespace cardiac::gres {

struct GresOptions {
  std::string type;       // every GPU's Type=; empty: from its product name
  std::string node_name;  // NodeName=; empty: the host name under the root, up to the first '.'
};

struct GresGpu {
  unsigned index = 0;  // NVML's
  unsigned minor = 0;  // /dev/nvidia<minor>
  std::string pci_bus_id;
  std::string name;  // NVML's product name
  std::string type;
  std::string cpus;   // the slot's local_cpulist as sysfs gives it; empty when unread
  std::string cores;  // the same CPUs as Slurm's logical core indices; empty: Cores= left out
  std::optional<std::vector<int>> links;  // per GPU in `gpus` order, -1 for itself
  [[nodiscard]] std::string file() const;
};

struct GresConf {
  std::string node_name;
  std::string driver_version;
  std::vector<GresGpu> gpus;       // in minor-number order: Slurm's index of each File=
  std::vector<std::string> notes;  // what was left out, and why
  // "NodeName=gpu-node-01 Gres=gpu:h100:8" (types in order of first appearance).
  [[nodiscard]] std::string node_line() const;
};

// "NVIDIA H100 80GB HBM3" → "h100", "Tesla V100-SXM2-32GB" → "v100", "NVIDIA GeForce RTX 3080"
// → "rtx3080", "NVIDIA RTX A6000" → "rtxa6000", "NVIDIA L40S" → "l40s": lower case, the
// vendor and brand words (NVIDIA, Tesla, GeForce, Quadro) dropped, then the first word of the
// name up to a space or '-', joined with the next word when it is RTX, GTX or TITAN. Only
// [a-z0-9] is kept. Empty when nothing is left.
std::string slurm_gpu_type(std::string_view product_name);

// "0-7,16-23\n" → {0..7, 16..23}, sorted and unique. An error names the bad part.
Result<std::vector<unsigned>> parse_cpu_list(std::string_view text);
// The reverse: ascending runs as ranges, "0-7,16-23".
std::string format_cpu_list(std::vector<unsigned> ids);

// Builds the file's content, GPUs in minor-number order: Slurm numbers the GPUs of a written
// gres.conf by the number in File=, and counts Links= positions in that numbering. Fails,
// naming what was not read, when NVML is not usable, lists
// no GPU, or a GPU lacks what its line needs (minor number, bus id, a type): a gres.conf that
// leaves a GPU out would hand Slurm fewer GPUs than the node has without saying so. Two GPUs
// with one minor number fail too.
Result<GresConf> build_gres(const nvml::GpuSnapshot& snap, const FileSystem& fs,
                            const GresOptions& options);

// The gres.conf text: a comment header (with the NodeName line and the notes), then one
// `Name=gpu Type=… File=… [Cores=…] [Links=…]` line per GPU.
std::string render_gres_conf(const GresConf& conf);

// Schema "cardiac.slurm-gres/v1" (docs/slurm-gres.md).
nlohmann::json to_json(const GresConf& conf);

}  // namespace cardiac::gres
