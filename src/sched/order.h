// SPDX-License-Identifier: Apache-2.0
// Policy order of the pending jobs and their multifactor priority breakdown.
#pragma once

#include <vector>

#include "sched/sched.h"

namespace cardiac::sched::detail {

struct Ranking {
  std::vector<unsigned> order;                // indices into `pending`, first to consider first
  std::vector<PriorityBreakdown> priorities;  // index-aligned with `pending`; empty if not asked
  // With the factors: each pending job's association (user, account) as a small number, equal
  // for jobs of the same association, below `associations`; else empty.
  std::vector<int> association;
  std::size_t associations = 0;
};

// Orders the pending jobs; `breakdown` also fills the multifactor breakdown for every job.
Ranking rank_jobs(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                  const PolicyConfig& policy, Order order, TimeNs now, bool breakdown);

}  // namespace cardiac::sched::detail
