// SPDX-License-Identifier: Apache-2.0
// Scheduling passes over a cluster state kept between them, for a caller that knows every
// start, end and health change (the simulator): a pass costs what the pending queue costs,
// not a rebuild of every GPU of the cluster. The pass itself is schedule()'s, unchanged.
#pragma once

#include <memory>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched {

// A pending queue the caller keeps in policy order, read one job at a time: a pass without
// reasons stops reading at a strict-order blocker, so it costs what it looks at (the jobs it
// starts, skips and stops at), not the length of the queue.
class OrderedPending {
 public:
  OrderedPending() = default;
  virtual ~OrderedPending() = default;
  OrderedPending(const OrderedPending&) = delete;
  OrderedPending& operator=(const OrderedPending&) = delete;

  // The next job in policy order (ties by submit time, then id, as schedule() breaks them);
  // nullptr after the last. Every pointer stays valid until the pass returns.
  virtual const Job* next() = 0;
  // Whether `id` is pending, read or not (a dependency that is neither pending, running nor
  // succeeded never will be).
  [[nodiscard]] virtual bool contains(JobId id) const = 0;
  // The least any job still to be read asks for, as far as the source knows: GPUs (a job
  // asking for none always starts) and memory per GPU of a shared job. A backfill pass
  // without reasons stops reading once no GPU could take that much. The default knows
  // nothing and never stops a pass.
  struct Least {
    unsigned gpus = 0;
    std::uint64_t shared_memory = 0;  // no shared job: the largest value
  };
  [[nodiscard]] virtual Least least() const { return {}; }
};

class Session {
 public:
  // Every GPU of `nodes` must be usable (not fenced, not busy outside) here; set_health
  // changes that afterwards.
  explicit Session(std::vector<Node> nodes);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // schedule() on the current cluster; the jobs it starts become running jobs (their time
  // limits from `pending`), so the next pass sees them.
  ScheduleResult pass(const std::vector<Job>& pending, const Usage& usage,
                      const PolicyConfig& policy, TimeNs now,
                      const std::vector<JobId>& finished_ok = {});
  // The same pass over a queue the caller keeps in policy order (`policy.order` only names it
  // in the reasons): no ranking of its own, and without reasons (`policy.explain` off) strict
  // order reads no further than its blocker. Equal to pass() on the same jobs when they come
  // in the order pass() ranks them, except that ScheduleResult::order lists only the jobs
  // read and ::priorities is empty.
  ScheduleResult pass_ordered(OrderedPending& pending, const PolicyConfig& policy, TimeNs now,
                              const std::vector<JobId>& finished_ok = {});
  // Off: the starts of later passes carry no placement (Start::placement empty) and neither
  // do their running jobs (Running::placement): none is built. A pass's started jobs are the
  // last `starts.size()` of cluster().running, in the order of its starts, and running_gpus
  // names their GPUs. On by default.
  void set_start_placements(bool on);
  // A running job ended, whatever the reason: its GPUs are free again. Unknown ids: no-op.
  void end(JobId id);
  // `gpu` is the GPU's position on its node.
  void set_health(unsigned node, unsigned gpu, GpuHealth health);

  [[nodiscard]] const Cluster& cluster() const;
  [[nodiscard]] bool running(JobId id) const;
  // The GPUs of cluster().running[i] by flat index: the nodes in order, each node's GPUs by
  // their position in Node::gpus (not necessarily in increasing order).
  [[nodiscard]] const std::vector<unsigned>& running_gpus(std::size_t i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cardiac::sched
