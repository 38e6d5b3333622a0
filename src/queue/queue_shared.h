// SPDX-License-Identifier: Apache-2.0
// Private to the queue: what its request handlers (queue_requests.*) and its scheduling loop
// (queue_loop.*) share behind the Queue facade, all under one lock: the store, the job
// lifecycle over it, and what the last scheduling pass found.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "queue/auth.h"
#include "queue/job.h"
#include "queue/job_lifecycle.h"
#include "queue/queue.h"
#include "sched/sched.h"
#include "store/db.h"

namespace cardiac::queue {

struct QueueShared {
  QueueShared(QueueOptions o, const Clock& c, ViewSource v);

  // Set before start() returns, read-only afterwards.
  QueueOptions options;
  const Clock& clock;
  ViewSource view;
  AuthPolicy auth;
  sched::PolicyConfig policy;

  std::mutex mu;  // guards everything below
  std::optional<store::Db> db;
  std::optional<JobLifecycle> jobs;  // over *db; every job state change goes through it
  // The last scheduling pass: what list and why explain. Its reasons are formatted when asked
  // for (reason()), not by the pass.
  sched::ScheduleResult last;
  // Why each pending job the last pass left out waits (backing off, a dependency that ended).
  std::map<JobId, std::string> reasons;
  std::string blocked;  // why nothing can start at all ("" when it can)
  // The machine as the last pass saw it.
  std::map<unsigned, std::string> busy_outside;
  std::map<unsigned, std::string> fenced;
  std::map<unsigned, std::string> alerting;  // GPUs with a critical alert firing (used last)
  std::map<unsigned, unsigned> utilization;
  // Xid counts at the moment a fence was cleared: only Xids seen after that fence again.
  std::map<std::pair<std::string, int>, std::uint64_t> xid_acked;
  // cardiac_queue_wait_seconds.
  std::vector<std::uint64_t> wait_counts;
  double wait_sum = 0;
  // What metrics_locked() last read from the store, and db->total_changes() then. Only this
  // connection writes jobs and usage, so the rows are read again only after it wrote some: a
  // scrape after each sample read three tables, one of them counted whole.
  struct StoredMetrics {
    std::int64_t changes = -1;
    std::map<std::string, double> jobs_by_state;
    std::map<std::string, double> usage;  // user → GPU-seconds of ended attempts
    std::vector<Job> running;
  };
  StoredMetrics stored_metrics;

  // Why a pending job waits after the last pass; nullopt when it has no reason yet.
  [[nodiscard]] std::optional<std::string> reason(JobId id) const;
  // The agent's latest view (an empty one when there is no source); call without `mu`.
  [[nodiscard]] MachineView machine() const;
  // Marks a running job as being stopped and sends its runner SIGTERM; the lifecycle decides
  // its state once the runner reports the end.
  void stop_job(Job& j, StopAction action, const std::string& reason);
  [[nodiscard]] metrics::QueueMetrics metrics_locked();
};

}  // namespace cardiac::queue
