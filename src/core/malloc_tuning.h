// SPDX-License-Identifier: Apache-2.0
// How the agent sets glibc's allocator before it starts its threads; the benchmarks of what
// runs inside the agent set it the same way, so that their figures carry its page faults.
#pragma once

#include <malloc.h>

namespace cardiac {

inline constexpr int kMallocArenas = 2;
inline constexpr int kMmapThreshold = 16 * 1024;

inline void tune_malloc_for_agent() {
  // glibc gives each thread that allocates an arena of its own (up to 8 per core): with a
  // dozen mostly idle threads that is a dozen heaps each keeping freed pages. Two arenas hold
  // the agent's few allocations per second without contention and keep its RSS flat.
  mallopt(M_ARENA_MAX, kMallocArenas);
  // Blocks of kMmapThreshold and more get pages of their own, given back on free. Without it
  // each roll-up's decoded samples (a vector per series) were carved from the arena the other
  // threads share, and the small blocks those threads kept meanwhile pinned the pages: the
  // agent's RSS stepped up by 0.5-2 MiB at roll-ups that malloc_trim could not give back
  // (bench/README.md, the agent soak). Fixed, so glibc does not raise it after a free. What
  // is made per scrape or per sample is therefore kept below it, or kept between calls.
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
}

}  // namespace cardiac
