// SPDX-License-Identifier: Apache-2.0
// The live GPU job queue the agent runs: requests from the socket (submit, list, cancel, hold,
// release, logs, why, share, fences), a scheduling loop that starts jobs through runners on
// the GPUs the policy picks, fences GPUs with critical findings and requeues their jobs, and
// adopts running jobs again after an agent restart. State lives in the agent's store; a
// submit is committed before its id is answered.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"
#include "metrics/queue_metrics.h"
#include "queue/auth.h"
#include "queue/cluster_view.h"
#include "queue/job.h"
#include "queue/job_store.h"
#include "queue/runner.h"
#include "queue/socket_server.h"
#include "sched/sched.h"
#include "store/db.h"

namespace cardiac::queue {

// A fence added or cleared, for whoever must hear of it (the agent raises an alert).
struct FenceNotice {
  bool fenced = true;  // false: the GPU's fences were cleared
  unsigned gpu = 0;
  std::string uuid;
  std::string reason;  // why it was fenced; for a clear, who cleared it
  std::string who;
  bool automatic = false;
  TimeNs at = 0;
};

struct QueueOptions {
  std::string state_dir;
  std::string executable;  // the cardiac binary, for `cardiac __job-runner`
  config::QueueSettings settings;
  std::string hostname = "localhost";
  // How long a submit waits for the agent's first GPU sample before it is queued unchecked.
  DurationNs first_sample_wait = 5 * kNsPerSec;
  DurationNs tick = 500 * kNsPerMs;  // the loop's period when nothing wakes it
  // Called with the queue's lock held (it must not call back into the queue) for every fence
  // added or cleared.
  std::function<void(const FenceNotice&)> on_fence;
};

// The agent's latest view; called from the queue's threads, must be thread-safe.
using ViewSource = std::function<MachineView()>;

class Queue {
 public:
  Queue(QueueOptions options, const Clock& clock, ViewSource view);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Checks the policy and admin group, opens the store, creates <state>/jobs, adopts the jobs
  // that were running, binds the socket and starts the loop. Errors name what is at fault
  // (kInvalidArgument for configuration).
  [[nodiscard]] Status start();
  // Stops the socket and the loop. Running jobs keep running (their runners are independent)
  // and are adopted by the next start. Idempotent.
  void stop();

  // One request from `who`; never throws. Thread-safe.
  nlohmann::json handle(const Principal& who, const nlohmann::json& request);
  // GET /api/v1/queue.
  [[nodiscard]] Result<nlohmann::json> api_json();
  [[nodiscard]] metrics::QueueMetrics metrics();
  // Runs one pass of the loop now (tests; the loop calls it itself).
  void tick();

 private:
  // Request handlers (queue_ops.cpp); called with mu_ held unless noted.
  Result<nlohmann::json> op_submit(const Principal& who, const nlohmann::json& req);
  Result<nlohmann::json> op_list(const nlohmann::json& req);
  Result<nlohmann::json> op_jobs(const nlohmann::json& req);
  Result<nlohmann::json> op_cancel(const Principal& who, const nlohmann::json& req);
  Result<nlohmann::json> op_hold(const Principal& who, const nlohmann::json& req, bool hold);
  Result<nlohmann::json> op_logs(const Principal& who, const nlohmann::json& req);
  Result<nlohmann::json> op_why(const nlohmann::json& req);
  Result<nlohmann::json> op_share();
  Result<nlohmann::json> op_fence(const Principal& who, const nlohmann::json& req);
  Result<Job> load_job(const nlohmann::json& req);
  nlohmann::json job_row(const Job& j);

  // The loop (queue_loop.cpp); with mu_ held.
  void run_loop();
  void wake();
  void reap_runners();
  void monitor(std::vector<Job>& running);
  void finish(Job j, const ExitRecord& rec);
  void lost(Job j);
  // `expedite`: the job was stopped because its GPU failed, not for anything it did: no
  // backoff, so it keeps its place (Slurm's expedited requeue).
  void requeue_or_end(Job& j, Attempt& a, const std::string& why, JobState final_state,
                      bool expedite = false);
  void fence_and_stop(const ClusterView& v, const std::vector<Job>& running);
  void stop_job(Job& j, StopAction action, const std::string& reason);
  void schedule(const ClusterView& v, const MachineView& view);
  // A dependency's state (nullopt: no such job) and end time, for schedule().
  struct DepState {
    std::optional<JobState> state;
    TimeNs end_ns = 0;
  };
  DepState dep_state(JobId dep);
  // Records that `j` became eligible at `at` (no earlier than its release), in the store.
  void note_eligible(Job& j, TimeNs at);
  bool start_job(Job j, const std::vector<unsigned>& gpus, const ClusterView& v);
  void charge(const Job& j, TimeNs end);
  void adopt();
  ClusterView cluster_now(const MachineView& view, const std::vector<Job>& running);
  sched::Usage usage_now(TimeNs now);
  DurationNs backoff_for(unsigned restarts) const;
  metrics::QueueMetrics metrics_locked();

  QueueOptions options_;
  const Clock& clock_;
  ViewSource view_;
  AuthPolicy auth_;
  sched::PolicyConfig policy_;

  std::mutex mu_;  // guards everything below
  std::optional<store::Db> db_;
  std::set<pid_t> spawned_;  // runners started by this process, to reap
  sched::ScheduleResult last_;
  std::map<JobId, std::string> reasons_;  // why each pending job waits, from the last pass
  std::string blocked_;                   // why nothing can start at all ("" when it can)
  std::map<unsigned, std::string> busy_outside_;
  std::map<unsigned, std::string> fenced_;
  std::map<unsigned, std::string> alerting_;  // GPUs with a critical alert firing (used last)
  std::map<unsigned, unsigned> utilization_;
  // Xid counts at the moment a fence was cleared: only Xids seen after that fence again.
  std::map<std::pair<std::string, int>, std::uint64_t> xid_acked_;
  std::vector<std::uint64_t> wait_counts_;
  double wait_sum_ = 0;

  std::unique_ptr<SocketServer> server_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  int inotify_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
};

// Histogram bounds of cardiac_queue_wait_seconds.
const std::vector<double>& wait_bounds_seconds();

}  // namespace cardiac::queue
