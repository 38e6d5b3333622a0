// SPDX-License-Identifier: Apache-2.0
// The simulator's pending jobs, kept in the policy's order between passes, so that a pass
// reads only the jobs it looks at and a deep queue costs nothing while it waits.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "sched/sched.h"
#include "sched/session.h"

namespace cardiac::sim::detail {

// Jobs are ordered as sched::schedule() ranks them: by sched::order_key, larger first, then
// submit time, then id. fcfs, sjf and las keys belong to the job and never change while it
// waits. priority and fairshare keys depend on the fair-share tree, the pending QOS range and
// the job's age; they are recomputed every `calc_period` (Slurm's PriorityCalcPeriod) when a
// pass is due, and a job arriving in between is placed by the fair-share factors of the last
// recomputation (an association never seen before gets its factor computed on arrival, one
// without jobs at the last recomputation keeps the factor it had), its age counted at its
// arrival and the QOS range of the queue then. `calc_period` 0 recomputes before every pass,
// which gives exactly the order schedule() would.
//
// Under fairshare every association (user, account) has its own lane in submit order, with
// the association's factor as the lane's key: a recomputation re-keys the lanes, not the
// jobs. Under priority a recomputation re-keys every job (a sort of the queue per period).
//
// Job ids must be small non-negative integers (the simulator's trace indices): per-id
// bookkeeping is a vector indexed by them.
class PendingQueue {
 public:
  PendingQueue(const sched::PolicyConfig& policy, DurationNs calc_period, double cluster_gpus);
  ~PendingQueue();
  PendingQueue(const PendingQueue&) = delete;
  PendingQueue& operator=(const PendingQueue&) = delete;

  // Adds a job (not already queued). `usage` is the fair-share usage now. Returns whether it
  // went ahead of a job already waiting (it is not last in order).
  bool push(sched::Job job, const sched::Usage& usage, TimeNs now);
  // Removes a queued job (a start); unknown ids are ignored.
  void erase(sched::JobId id);
  // A job pushed earlier is neither pending nor running any more: its association leaves the
  // fair-share tree once no job of it is left. Ids never pushed are ignored.
  void left(sched::JobId id);

  // Before a pass: recomputes priority factors when they are due (the period is over, or
  // always with period 0).
  void refresh(const sched::Usage& usage, TimeNs now);
  // The queue in order, for one pass; valid until the queue next changes.
  sched::OrderedPending& ordered();
  // Every queued job, in no particular order (a copy).
  [[nodiscard]] std::vector<sched::Job> jobs() const;

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // The fewest GPUs any queued job asks for (none: max unsigned), and whether one is shared.
  [[nodiscard]] unsigned smallest_gpus() const;
  [[nodiscard]] bool any_shared() const { return !shared_memory_.empty(); }
  // How many times the priority factors were computed (passes with period 0).
  [[nodiscard]] std::size_t recomputations() const { return recomputations_; }

 private:
  struct Key {
    double key = 0;
    TimeNs submit = 0;
    sched::JobId id = 0;
  };
  struct Before {
    bool operator()(const Key& a, const Key& b) const {
      if (a.key != b.key) return a.key > b.key;
      if (a.submit != b.submit) return a.submit < b.submit;
      return a.id < b.id;
    }
  };
  using Jobs = std::map<Key, sched::Job, Before>;
  struct Lane {
    double key = 0;  // fairshare: the association's factor
    Jobs jobs;
  };
  struct Where {
    bool pushed = false;  // ever: `assoc` is its association
    bool queued = false;
    unsigned lane = 0;
    unsigned assoc = 0;
    Key key{};
  };
  class Cursor;

  [[nodiscard]] bool uses_factors() const;
  [[nodiscard]] bool by_association() const;
  unsigned association(const sched::Job& job);
  void compute_factors(const sched::Usage& usage);
  [[nodiscard]] sched::PriorityScale current_scale() const;
  // The job's key; `scale` is the QOS range of the queue now.
  [[nodiscard]] double key_of(const sched::Job& job, unsigned assoc, TimeNs now,
                              const sched::PriorityScale& scale) const;

  sched::PolicyConfig policy_;
  DurationNs period_ = 0;
  double cluster_gpus_ = 0;
  std::vector<Lane> lanes_;
  std::vector<Where> where_;  // by job id
  std::size_t size_ = 0;
  std::map<unsigned, std::size_t> gpus_;                // GPUs asked → queued jobs
  std::map<int, std::size_t> qos_;                      // Job::priority → queued jobs
  std::map<std::uint64_t, std::size_t> shared_memory_;  // shared jobs' memory per GPU → jobs

  // Associations ever seen, by (user, account); `live` counts their jobs pending or running.
  std::map<std::pair<std::string, std::string>, unsigned> assoc_of_;
  std::vector<std::pair<std::string, std::string>> assocs_;
  std::vector<std::size_t> live_;
  std::vector<std::optional<double>> factor_;  // per association, at the last computation
  sched::PriorityScale scale_{};               // at the last computation
  std::optional<TimeNs> computed_at_;
  std::size_t recomputations_ = 0;
  std::unique_ptr<Cursor> cursor_;
};

}  // namespace cardiac::sim::detail
