// SPDX-License-Identifier: Apache-2.0
// Uptime, kernel release, hostname and the NVIDIA kernel module's presence and version.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

struct Uptime {
  double up_s = 0;
  double idle_s = 0;  // summed over CPUs, so it can exceed up_s
};

// Every field is absent when its file is missing or unreadable.
struct SystemInfo {
  std::optional<double> uptime_s;
  std::optional<std::string> kernel;    // "6.1.0-18-amd64"
  std::optional<std::string> hostname;  // the kernel's nodename (UTS namespace of the reader)
  std::optional<std::string> nvidia_driver_version;  // "550.54.15"
  // /sys/module/nvidia or /proc/driver/nvidia exists: the module is loaded, whether or not
  // its version could be read.
  bool nvidia_module_loaded = false;
};

// Parses /proc/uptime ("483.59 936.66"). Empty or malformed text is a parse error.
[[nodiscard]] Result<Uptime> parse_uptime(std::string_view text);

// The release from /proc/version ("Linux version 6.1.0-18-amd64 (...) ..."): the fallback
// for when /proc/sys/kernel/osrelease is unreadable.
[[nodiscard]] Result<std::string> parse_proc_version(std::string_view text);

// The version from /proc/driver/nvidia/version, proprietary or open kernel module:
//   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..."
//   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ..."
// The version is the first field after "Kernel Module" that looks like N.N[.N]; no NVRM
// line or no such field is a parse error.
[[nodiscard]] Result<std::string> parse_nvidia_driver_version(std::string_view text);

// Reads uptime, kernel release (osrelease, else /proc/version), hostname and the NVIDIA
// module state. Never fails: unreadable parts stay absent. Parse errors of files that exist
// are appended to `errors` (each naming its file), when given.
[[nodiscard]] SystemInfo collect_system_info(const FileSystem& fs,
                                             std::vector<std::string>* errors = nullptr);

}  // namespace cardiac::host
