// SPDX-License-Identifier: Apache-2.0
// How many times this benchmark process has called operator new: linked into a benchmark binary,
// alloc_count.cpp replaces the global operator new with one that counts, so that a benchmark can
// report allocations per iteration (malloc called directly, as SQLite does, is not counted).
#pragma once

#include <cstdint>

namespace cardiac::bench {

[[nodiscard]] std::uint64_t allocations();

}  // namespace cardiac::bench
