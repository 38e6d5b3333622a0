// SPDX-License-Identifier: Apache-2.0
// What a Slurm hook does about this node, decided from its faults and the nodes Slurm lists:
// drain with cardiac's reason, resume a node cardiac drained, leave a person's drain alone, or
// hold a drain the blast-radius limit forbids. Pure, for tests; cmd_slurm.cpp acts on it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/clock.h"
#include "slurm/nodes.h"

namespace cardiac::slurm {

// The blast-radius limit ([slurm] in cardiac.toml): within any `window`, cardiac drains at most
// max(min_nodes, floor(percent % of the nodes Slurm lists)) nodes, and never more than
// max_nodes when that is set. One bad rule or a driver-wide event then empties a small part of
// the cluster, not all of it.
struct DrainLimit {
  double percent = 10;
  unsigned min_nodes = 1;
  unsigned max_nodes = 0;  // 0: no cap beyond the percentage
  DurationNs window = 10 * 60 * kNsPerSec;
};

// How many drains the limit allows within one window for a fleet of `fleet` nodes.
std::size_t drain_allowance(const DrainLimit& limit, std::size_t fleet);

// Nodes other than `self` drained with cardiac's reason set within the window ending at `now`
// (a reason without a readable time counts: better to hold one drain too many).
std::vector<std::string> recent_drains(const std::vector<NodeInfo>& nodes, const std::string& self,
                                       const DrainLimit& limit, TimeNs now);

// After draining `self`: whether its drain is one too many. Two nodes checking at the same
// moment can both see room for one more drain; each re-reads Slurm afterwards and ranks
// cardiac's drains within the window by reason time, then node name (the same order on every
// node), and a drain ranked past the allowance is undone. True when `self` must resume.
bool drain_overdrawn(const std::vector<NodeInfo>& nodes, const std::string& self,
                     const DrainLimit& limit, TimeNs now);

enum class Action {
  kNone,    // nothing to change
  kDrain,   // drain with `reason`
  kResume,  // healthy again and drained by cardiac: resume
  kHold,    // should drain, but the blast-radius limit is reached: alert instead
};

struct Plan {
  Action action = Action::kNone;
  std::string reason;         // kDrain, kHold: the drain reason (with cardiac's prefix)
  std::string why;            // one line saying what was decided and why
  std::size_t recent = 0;     // cardiac's drains of other nodes within the window
  std::size_t allowance = 0;  // what the limit allows for this fleet
  std::vector<std::string> recent_nodes;
};

// A drain of `self` with `problem` (no prefix yet), within the limit.
Plan plan_drain(const std::string& problem, const NodeInfo& self,
                const std::vector<NodeInfo>& nodes, const DrainLimit& limit, TimeNs now);

// The health check: `critical` lists this node's critical problems (empty: healthy).
Plan plan_healthcheck(const std::vector<std::string>& critical, const NodeInfo& self,
                      const std::vector<NodeInfo>& nodes, const DrainLimit& limit, TimeNs now);

std::string_view action_name(Action a);  // "none", "drain", "resume", "hold"

}  // namespace cardiac::slurm
