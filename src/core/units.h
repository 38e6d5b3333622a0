// SPDX-License-Identifier: Apache-2.0
// Human-readable sizes for terminal output.
#pragma once

#include <cstdint>
#include <string>

namespace cardiac {

// "79.6 GiB", "512 MiB", "0 B" (binary units, one decimal above KiB).
std::string format_bytes(std::uint64_t bytes);

}  // namespace cardiac
