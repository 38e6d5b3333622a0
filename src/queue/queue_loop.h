// SPDX-License-Identifier: Apache-2.0
// Private to the queue: its scheduling loop. One pass settles ended and vanished runners,
// fences GPUs with critical findings and stops their jobs, then starts what the policy picks;
// the job state changes themselves go through the lifecycle.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "queue/cluster_view.h"
#include "queue/job.h"
#include "queue/queue_shared.h"
#include "sched/kept_order.h"

namespace cardiac::queue {

class SchedulingLoop {
 public:
  explicit SchedulingLoop(QueueShared& q)
      : q_(q), order_(q.options.settings.priority_calc_period) {}

  // One pass; takes the shared lock. A pass that nothing asked for (`woken` false: only the
  // loop's timer) is skipped while no job is running, pending or held and the agent has
  // published no sample since the last pass: it would find what the last one found, and an
  // idle agent paid most of its CPU for such passes. A new sample always makes a full pass.
  void tick(bool woken = true);
  // Finds the runners of the jobs that were running when the agent stopped; with the lock
  // held, at start.
  void adopt();

 private:
  void reap_runners();
  void monitor(std::vector<Job>& running);
  void fence_and_stop(const ClusterView& v, const std::vector<Job>& running);
  void schedule(const ClusterView& v, const MachineView& view);
  // [queue] auto_unfence: clears the automatic fences of GPUs that recovered on their own.
  void auto_unfence(const ClusterView& v, const MachineView& view);
  // A dependency's state (nullopt: no such job) and end time, for schedule().
  struct DepState {
    std::optional<JobState> state;
    TimeNs end_ns = 0;
  };
  DepState dep_state(JobId dep);
  bool start_job(Job j, const std::vector<unsigned>& gpus, const ClusterView& v);
  ClusterView cluster_now(const MachineView& view, const std::vector<Job>& running);

  QueueShared& q_;
  std::set<pid_t> spawned_;  // runners started by this process, to reap (under the lock)
  // The pending jobs' policy order, kept between passes; priority factors are recomputed
  // every priority_calc_period (under the lock).
  sched::KeptOrder order_;
  // GPU index → since when its fences could be lifted (auto_unfence; under the lock).
  std::map<unsigned, TimeNs> recovered_since_;
  // The sample the last pass saw, and whether that pass found no job running, pending or
  // held (under the lock).
  std::shared_ptr<const health::StatusReport> last_report_;
  bool idle_ = false;
  bool none_running_ = false;
};

}  // namespace cardiac::queue
