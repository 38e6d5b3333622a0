// SPDX-License-Identifier: Apache-2.0
// The failure history of a simulated fleet as failure statistics: what `cardiac sim
// --failures-out` writes, and the known-truth half of the round-trip test.
#pragma once

#include <cstdint>

#include "failstats/stats.h"
#include "sim/failures.h"

namespace cardiac::failstats {

// Every failure sim::FailureProcess draws for (model, topology, seed) in [0, horizon): the same
// stream the engine is fed, correlated secondaries included, each a failure whether or not its
// hardware was already down (the model's rates count them so). Nodes are "node0000"...,
// GPUs "node0000/gpu0"...; every node is exposed for the whole horizon. Repair: the sampled
// time (job-scope failures have none).
[[nodiscard]] FailureStats stats_from_simulation(const sim::FailureModel& model,
                                                 const sim::Topology& topology, std::uint64_t seed,
                                                 TimeNs horizon);

}  // namespace cardiac::failstats
