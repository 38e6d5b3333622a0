// SPDX-License-Identifier: Apache-2.0
// Memory and swap totals from /proc/meminfo.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

// Bytes. A key the kernel did not write stays absent: MemAvailable appeared in 3.14 and is
// deliberately not estimated on older kernels, because the estimate would look like a reading.
struct MemInfo {
  std::uint64_t total = 0;
  std::optional<std::uint64_t> free;
  std::optional<std::uint64_t> available;
  std::optional<std::uint64_t> buffers;
  std::optional<std::uint64_t> cached;
  std::optional<std::uint64_t> swap_total;
  std::optional<std::uint64_t> swap_free;
};

// Parses /proc/meminfo. Every non-blank line must read "Key: number [kB]"; MemTotal is
// required. A malformed line, a value that overflows 64 bits in bytes, or empty text is a
// parse error naming the line.
[[nodiscard]] Result<MemInfo> parse_meminfo(std::string_view text);

// Reads /proc/meminfo through `fs`. A missing file is a kNotFound error.
[[nodiscard]] Result<MemInfo> collect_meminfo(const FileSystem& fs);

}  // namespace cardiac::host
