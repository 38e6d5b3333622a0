// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the simulator's tests.
#pragma once

#include <string>

#include "sched/sched.h"
#include "sim/engine.h"

namespace cardiac::sim {

// A simulation of `cluster` (e.g. "2x8") under `policy`, without per-job reasons.
inline SimConfig test_config(const std::string& cluster, const std::string& policy) {
  SimConfig c;
  c.cluster = *parse_cluster(cluster);
  c.policy = *sched::parse_policy(policy);
  c.policy.explain = false;
  return c;
}

}  // namespace cardiac::sim
