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

// glibc's per-thread cache (tcache) keeps up to 7 freed blocks of each small size in every thread
// that allocates; they count as in use, malloc_trim cannot give them back, and the cache of a
// thread fills as rarer paths run (a seal, a roll-up, a security scan). With it the agent's live
// heap crept up by about 0.3 MiB in the first half hour; without it the heap stayed level, and
// the agent used no more CPU at its thousand or so allocations a second (bench/README.md). It
// can only be turned off before the process starts (GLIBC_TUNABLES), so the agent re-executes
// itself once with `glibc.malloc.tcache_count=0` added.
inline constexpr const char* kAgentTunable = "glibc.malloc.tcache_count=0";

// Call first in main(): in a process that reexec_with_agent_tunables() started, puts
// GLIBC_TUNABLES back as the caller had it, so that what the agent starts (its workers, queue
// jobs) inherits the caller's environment, not the agent's allocator settings.
void restore_environment_after_reexec();

// Before the agent starts any thread: re-executes this process (/proc/self/exe with the same
// arguments) with kAgentTunable added to GLIBC_TUNABLES. Returns, doing nothing, in the
// re-executed process, when GLIBC_TUNABLES already sets tcache_count (the caller's choice
// stands), or when the re-exec cannot be made (the agent then runs with glibc's defaults).
void reexec_with_agent_tunables();

}  // namespace cardiac
