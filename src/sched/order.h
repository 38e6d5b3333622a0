// SPDX-License-Identifier: Apache-2.0
// Policy order of the pending jobs and their multifactor priority breakdown.
#pragma once

#include <string_view>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched::detail {

enum class Order { kFcfs, kPriority, kFairshare, kSjf, kLas };

// Unknown names order like fcfs: parse_policy is where names are checked.
Order order_of(std::string_view name);
std::string_view order_name(Order o);

struct Ranking {
  std::vector<unsigned> order;                // indices into `pending`, first to consider first
  std::vector<PriorityBreakdown> priorities;  // index-aligned with `pending`; empty if not asked
};

// Orders the pending jobs; `breakdown` also fills the multifactor breakdown for every job.
Ranking rank_jobs(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                  const PolicyConfig& policy, Order order, TimeNs now, bool breakdown);

}  // namespace cardiac::sched::detail
