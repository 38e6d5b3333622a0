// SPDX-License-Identifier: Apache-2.0
// The body of one scheduling pass, on a cluster state the caller owns: schedule() builds a
// fresh state for every pass; Session keeps one across passes.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sched/capacity.h"
#include "sched/sched.h"
#include "sched/session.h"
#include "sched/state.h"

namespace cardiac::sched::detail {

// A vector of jobs read in the order of an index list (a ranking or a kept order).
class IndexedPending final : public OrderedPending {
 public:
  IndexedPending(const std::vector<Job>& pending, const std::vector<unsigned>& order)
      : pending_(pending), order_(order) {}
  const Job* next() override { return at_ < order_.size() ? &pending_[order_[at_++]] : nullptr; }
  [[nodiscard]] bool contains(JobId id) const override {
    if (ids_.empty()) {
      for (const Job& j : pending_) ids_.insert(j.id);
    }
    return ids_.contains(id);
  }

 private:
  const std::vector<Job>& pending_;
  const std::vector<unsigned>& order_;
  std::size_t at_ = 0;
  mutable std::unordered_set<JobId> ids_;  // filled on the first contains()
};

struct OrderedPass {
  ScheduleResult result;
  std::vector<const Job*> started;  // the jobs of result.starts, index-aligned
  std::vector<Alloc> allocs;        // their GPUs in the state's numbering, index-aligned
};

// The pass over jobs already in policy order, read one at a time; without reasons
// (`policy.explain` off) a strict pass stops reading at its blocker. ScheduleResult::order
// holds the jobs read (nothing without `list_read`); ::priorities stays empty. Applies the
// starts it chooses to `state`; `state` must describe `cluster` (its nodes and, index-aligned,
// its running jobs) and `capacity` its nodes. `placements` off: the starts carry no placement
// (Start::placement empty), their GPUs only in OrderedPass::allocs.
OrderedPass run_ordered(const Cluster& cluster, ClusterState& state, Capacity& capacity,
                        OrderedPending& pending, const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok, bool list_read = true,
                        bool placements = true);

// schedule()'s pass: ranks `pending` by the policy, then run_ordered; ScheduleResult::order
// holds every pending job and ::priorities their breakdown (with `explain`).
OrderedPass run_pass(const Cluster& cluster, ClusterState& state, Capacity& capacity,
                     const std::vector<Job>& pending, const Usage& usage,
                     const PolicyConfig& policy, TimeNs now, const std::vector<JobId>& finished_ok,
                     bool placements = true);

// The backfill head's reservation (reservation.cpp).
struct Plan {
  TimeNs start = 0;
  TimeNs end = 0;  // the end time at which the job fits; start is the later of it and now
  Alloc alloc{};
};

// The head's reservation for `need` on `state`, from the running jobs' ends and `started`
// (the ends and allocations of jobs started earlier in this pass), or the one the last
// backfill pass on this state planned when the state's version and the request are the same.
// The state is left as it came.
std::optional<Plan> reserve(ClusterState& state, const Need& need, bool spread, TimeNs now,
                            const std::vector<std::pair<TimeNs, const Alloc*>>& started);

// The head's reservation as a backfill pass plans it on `state`, from the running jobs'
// ends: when `need` first fits as they end by their limits, and on which GPUs; the state is
// left as it came. `whole_nodes` false releases jobs on the state for every request, never
// counting whole nodes beside it: the reference the tests hold that count to. `hint`: an end
// time the count sorts the ends up to first (any value gives the same reservation).
std::optional<std::pair<TimeNs, Alloc>> plan_reservation(
    ClusterState& state, const Need& need, bool spread, TimeNs now, bool whole_nodes = true,
    TimeNs hint = std::numeric_limits<TimeNs>::min());

}  // namespace cardiac::sched::detail
