// SPDX-License-Identifier: Apache-2.0
// Every change of a job's state, in one place: which changes are allowed (one table,
// `transition_allowed`), and what each one writes (state, times, the attempt row, the reason)
// to the store. The queue's requests and its loop ask for a change by name; nothing else
// writes a job's state. Not thread-safe: the queue calls it with its lock held.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "queue/job.h"
#include "queue/runner.h"
#include "store/db.h"

namespace cardiac::queue {

// The rule: whether a job in `from` may move to `to`. A job is born pending (submit); the
// states `is_terminal` names are never left. docs/queue.md draws the table.
bool transition_allowed(JobState from, JobState to);
// The rule as a Status: refused changes are kInvalidArgument errors that name both states.
[[nodiscard]] Status check_transition(JobState from, JobState to);

// What a change records besides the new state.
struct Step {
  std::string reason;  // the job's reason afterwards ("" clears it)
  // Leaving running, how the attempt ended:
  TimeNs end_ns = 0;  // 0: now
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string attempt_reason;  // the attempt row's reason (without the requeue note)
  bool charge = true;          // the attempt's GPU time counts toward fair share
  bool expedite = false;       // running → pending without a backoff (its GPU failed)
  // Entering running, the GPUs it was given:
  std::vector<unsigned> gpus;
  std::vector<std::string> uuids;
};

struct LifecycleOptions {
  unsigned retry_limit = 3;             // requeues before a job ends failed or lost
  DurationNs backoff = 10 * kNsPerSec;  // before the first retry; doubles, at most 600 s
  // Called inside the transaction that ends an attempt, before the job changes: fair share
  // charges the attempt's GPU time here.
  std::function<void(const Job& j, TimeNs end)> charge;
};

class JobLifecycle {
 public:
  JobLifecycle(store::Db& db, const Clock& clock, LifecycleOptions options);

  // A new job, pending, submitted now; committed before it returns, with `j.id` set.
  [[nodiscard]] Status submit(Job& j);
  // pending → held; held → pending (its age counts from the release).
  [[nodiscard]] Status hold(Job& j, std::string reason);
  [[nodiscard]] Status release(Job& j);
  // pending or held → cancelled. A running job is stopped instead (request_stop).
  [[nodiscard]] Status cancel(Job& j, std::string reason);
  // pending → running: the next attempt on `gpus`, recorded before its runner starts.
  [[nodiscard]] Status start(Job& j, std::vector<unsigned> gpus, std::vector<std::string> uuids);
  // running → failed: its runner could not be started.
  [[nodiscard]] Status runner_failed(Job& j, std::string reason);
  // running → what its runner's exit record says (completed, failed, timeout, cancelled,
  // or back to pending when it was stopped for its GPU and retries are left).
  [[nodiscard]] Status settle(Job& j, const ExitRecord& rec);
  // running → cancelled, pending (requeued) or lost: its runner vanished without a record.
  [[nodiscard]] Status lose(Job& j);

  // Changes to a job that keep its state.
  // The runner of the current attempt (pid + start time, against pid reuse).
  [[nodiscard]] Status record_runner(Job& j, pid_t pid, std::int64_t start_ticks);
  // Marks a running job as being stopped; `action` decides its state once the runner ends.
  [[nodiscard]] Status request_stop(Job& j, StopAction action, std::string reason);
  // It became eligible at `at` (released, dependencies met), no earlier than it was before.
  [[nodiscard]] Status note_eligible(Job& j, TimeNs at);

  // The one place a job's state changes: checks the rule, applies `step` and writes the job
  // (and its attempt row when one starts or ends) in one transaction. `j` is changed only
  // when the write committed.
  [[nodiscard]] Status apply(Job& j, JobState to, Step step);

  // The wait before retry number `restarts` + 1.
  [[nodiscard]] DurationNs backoff_for(unsigned restarts) const;

 private:
  // running → pending while retries are left, else → `final_state`.
  Status requeue_or_end(Job& j, Step step, JobState final_state);

  store::Db& db_;
  const Clock& clock_;
  LifecycleOptions options_;
};

}  // namespace cardiac::queue
