// SPDX-License-Identifier: Apache-2.0
// Scheduling passes over a pending queue read afresh for every pass (the live queue re-reads
// its jobs from the database), with the policy order kept between passes: the priority and
// fair-share factors are recomputed every `calc_period` (Slurm's PriorityCalcPeriod) and in
// between a pass neither ranks nor sorts the queue.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched {

// A recomputation ranks every pending job as schedule() does. Between recomputations the jobs
// keep those keys, a job that left is dropped and a job seen for the first time is placed by
// the last recomputation's factors: its association's fair-share factor then (one not in the
// tree then gets its factor computed on arrival), its age at the pass that first sees it and
// the cluster size of then; a job whose priority (QOS) lies outside the range of then brings
// the recomputation forward, since it changes every job's QOS factor. A job that leaves and
// comes back before the next recomputation (requeued) keeps its place.
// ScheduleResult::priorities shows the kept breakdowns. `calc_period` 0 recomputes before
// every pass: exactly schedule().
//
// The placement state is kept between passes too: a pass compares the cluster it is given with
// the one before (GPU health, running jobs) and applies the difference, instead of rebuilding
// the state of every GPU; a change of the nodes themselves (GPUs, memory, models) or a GPU
// usable again that was not when the state was built rebuilds it.
class KeptOrder {
 public:
  explicit KeptOrder(DurationNs calc_period);
  ~KeptOrder();
  KeptOrder(KeptOrder&&) noexcept;
  KeptOrder& operator=(KeptOrder&&) noexcept;
  KeptOrder(const KeptOrder&) = delete;
  KeptOrder& operator=(const KeptOrder&) = delete;

  // schedule() on `pending` (in any order), in the kept order; a recomputation when one is
  // due (the period is over, the clock went back, the policy changed, a priority outside the
  // last range, or never yet).
  ScheduleResult pass(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                      const PolicyConfig& policy, TimeNs now,
                      const std::vector<JobId>& finished_ok = {});

  // How many passes recomputed the factors.
  [[nodiscard]] std::size_t recomputations() const { return recomputations_; }
  // How many passes built the placement state from scratch.
  [[nodiscard]] std::size_t rebuilds() const { return rebuilds_; }

 private:
  struct Kept {
    double key = 0;  // schedule()'s sort key, larger first
    TimeNs submit = 0;
    JobId id = 0;
    PriorityBreakdown breakdown{};
  };
  struct Live;
  // The kept state, brought in step with `cluster`.
  Live& sync(const Cluster& cluster);

  // Returns the pending jobs' indices in the new order.
  std::vector<unsigned> recompute(const Cluster& cluster, const std::vector<Job>& pending,
                                  const Usage& usage, const PolicyConfig& policy, TimeNs now);
  Kept place(const Job& job, const Usage& usage, const PolicyConfig& policy, TimeNs now);
  // Between recomputations: the pending jobs in the kept order (`order`, indices into
  // `pending`) and their slots (`kept`), the ones seen for the first time placed and merged in.
  void place_all(const std::vector<Job>& pending, const Usage& usage, const PolicyConfig& policy,
                 TimeNs now, std::vector<unsigned>& order, std::vector<unsigned>& kept);

  DurationNs period_ = 0;
  std::optional<TimeNs> calc_at_;
  std::string policy_;           // policy_text() of the last recomputation
  std::vector<Kept> slots_;      // every job kept since the last recomputation, gone ones too
  std::vector<unsigned> order_;  // indices into slots_, in order
  std::vector<std::pair<JobId, unsigned>> by_id_;  // (id, index into slots_), by id
  std::map<std::pair<std::string, std::string>, double> fairshare_;  // per association
  PriorityScale scale_{};
  std::size_t recomputations_ = 0;
  std::size_t rebuilds_ = 0;
  std::unique_ptr<Live> live_;
};

}  // namespace cardiac::sched
