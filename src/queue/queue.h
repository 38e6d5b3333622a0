// SPDX-License-Identifier: Apache-2.0
// The live GPU job queue the agent runs: requests from the socket (submit, list, cancel, hold,
// release, logs, why, share, fences), a scheduling loop that starts jobs through runners on
// the GPUs the policy picks, fences GPUs with critical findings and requeues their jobs, and
// adopts running jobs again after an agent restart. State lives in the agent's store; a
// submit is committed before its id is answered. This header is the facade the agent uses;
// the store, socket and scheduler stay behind it (queue_internal.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"
#include "metrics/queue_metrics.h"
#include "queue/auth.h"
#include "queue/machine_view.h"

namespace cardiac::queue {

// The `who` of a fence that auto-unfence cleared ([queue] auto_unfence, docs/queue.md).
inline constexpr const char* kAutoUnfenceWho = "cardiac (auto-unfence)";

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
  // The request handlers, the scheduling loop and the job lifecycle behind them
  // (queue_internal.h).
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Histogram bounds of cardiac_queue_wait_seconds.
const std::vector<double>& wait_bounds_seconds();

}  // namespace cardiac::queue
