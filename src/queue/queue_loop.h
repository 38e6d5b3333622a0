// SPDX-License-Identifier: Apache-2.0
// Private to the queue: its scheduling loop. One pass settles ended and vanished runners,
// fences GPUs with critical findings and stops their jobs, then starts what the policy picks;
// the job state changes themselves go through the lifecycle.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
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

  // One pass; takes the shared lock. While no job is running, pending or held, a pass that
  // nothing asked for (`woken` false: only the loop's timer) reads nothing from the store:
  // every change to the jobs and fences comes through a request (note_request) or a job file,
  // and those wake the loop. Such a pass is skipped when the agent has published no sample
  // since the last one; with a new sample it only publishes what the sample shows (idle_pass),
  // unless the sample has a critical finding or some GPU is fenced, which takes a full pass.
  // An idle agent paid most of its CPU for full passes that found what the last one found.
  void tick(bool woken = true);
  // A request was handled (under the lock): the next pass reads the store again.
  void note_request();
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
  // Uses the fences the last full pass read (fences_).
  ClusterView cluster_now(const MachineView& view, const std::vector<Job>& running);
  // The idle queue's pass on a new sample; false when it takes a full pass instead.
  bool idle_pass(const MachineView& view);
  // What the status shows of a pass: fenced, busy, alerting and utilization per GPU.
  void publish(const ClusterView& v);
  // Why no job can start whatever the queue holds (no sample yet, NVML unusable).
  static std::optional<std::string> blocked_by(const MachineView& view);

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
  // The active fences as the last full pass read them (under the lock).
  std::vector<Fence> fences_;
  // Views read by passes so far (under view_mu_, taken only around the read), and the number
  // of the newest one a pass acted on (under the shared lock): a pass never acts on a view
  // older than one already acted on.
  std::mutex view_mu_;
  std::uint64_t views_read_ = 0;
  std::uint64_t view_acted_ = 0;
};

}  // namespace cardiac::queue
