// SPDX-License-Identifier: Apache-2.0
// The file readers behind capture(): OS release, library versions, kernel parameters, IOMMU,
// NUMA, huge pages and the CPU governor. Each appends its facts; none fails.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "baseline/baseline.h"
#include "nvml/gpu.h"
#include "platform/fs.h"

namespace cardiac::baseline {

// Why the facts only NVML knows are unset: "NVML not asked (--offline)", its error.
[[nodiscard]] std::string nvml_unread_reason(const nvml::GpuSnapshot* gpus);

// "os": ID and VERSION_ID of /etc/os-release (else /usr/lib/os-release): "debian 12".
void add_os_release(const FileSystem& fs, std::vector<Fact>& out);
// "library.<name>" for NCCL, cuDNN, cuBLAS and libnvidia-ml: the versions in the library file
// names ("libnccl.so.2.21.5") of the usual directories, /etc/ld.so.conf(.d) and the paths in
// /etc/ld.so.cache; "absent" when none is found.
void add_libraries(const FileSystem& fs, std::vector<Fact>& out);
// "cmdline.*", "iommu.*", "sysctl.*", "numa.nodes", "hugepages.*", "cpu.governor".
void add_host_settings(const FileSystem& fs, std::vector<Fact>& out);

// The version in a shared library's file name: "libnccl.so.2.21.5" with stem "libnccl.so." →
// "2.21.5"; "" when the name is not that library or carries no version.
[[nodiscard]] std::string library_version(std::string_view file, std::string_view stem);

// Key order with numbers compared as numbers: gpu.2.* before gpu.10.*.
[[nodiscard]] bool key_less(std::string_view a, std::string_view b);

}  // namespace cardiac::baseline
