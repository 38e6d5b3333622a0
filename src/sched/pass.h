// SPDX-License-Identifier: Apache-2.0
// The body of one scheduling pass, on a cluster state the caller owns: schedule() builds a
// fresh state for every pass; Session keeps one across passes.
#pragma once

#include <vector>

#include "sched/capacity.h"
#include "sched/sched.h"
#include "sched/state.h"

namespace cardiac::sched::detail {

// Applies the starts it chooses to `state`; `state` must describe `cluster` (its nodes and,
// index-aligned, its running jobs) and `capacity` its nodes.
ScheduleResult run_pass(const Cluster& cluster, ClusterState& state, Capacity& capacity,
                        const std::vector<Job>& pending, const Usage& usage,
                        const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok);

}  // namespace cardiac::sched::detail
