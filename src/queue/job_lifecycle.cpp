// SPDX-License-Identifier: Apache-2.0
// The transition table, the one function that applies a transition, and the named changes
// the queue asks for (what an exit record or a vanished runner means for the job).
#include "queue/job_lifecycle.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/format.h"
#include "core/log.h"
#include "core/time.h"
#include "queue/job_store.h"

namespace cardiac::queue {
namespace {

constexpr DurationNs kMaxBackoff = 600 * kNsPerSec;

// Every allowed (from, to); anything else is refused.
constexpr std::array<std::pair<JobState, JobState>, 11> kAllowed{{
    {JobState::kPending, JobState::kHeld},
    {JobState::kPending, JobState::kRunning},
    {JobState::kPending, JobState::kCancelled},
    {JobState::kHeld, JobState::kPending},
    {JobState::kHeld, JobState::kCancelled},
    {JobState::kRunning, JobState::kCompleted},
    {JobState::kRunning, JobState::kFailed},
    {JobState::kRunning, JobState::kTimeout},
    {JobState::kRunning, JobState::kCancelled},
    {JobState::kRunning, JobState::kLost},
    {JobState::kRunning, JobState::kPending},  // requeued: a new attempt later
}};

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? fmt::format("signal {} (SIG{})", sig, name) : fmt::format("signal {}", sig);
}

// The attempt row's outcome: the state the attempt led to.
std::string outcome_of(JobState to) {
  return to == JobState::kPending ? "requeued" : std::string(job_state_name(to));
}

}  // namespace

bool transition_allowed(JobState from, JobState to) {
  return std::find(kAllowed.begin(), kAllowed.end(), std::pair{from, to}) != kAllowed.end();
}

Status check_transition(JobState from, JobState to) {
  if (transition_allowed(from, to)) return {};
  return fail(Error::invalid(
      fmt::format("a job cannot go from {} to {}", job_state_name(from), job_state_name(to))));
}

JobLifecycle::JobLifecycle(store::Db& db, const Clock& clock, LifecycleOptions options)
    : db_(db), clock_(clock), options_(std::move(options)) {}

DurationNs JobLifecycle::backoff_for(unsigned restarts) const {
  DurationNs d = options_.backoff;
  for (unsigned i = 0; i < restarts && d < kMaxBackoff; ++i) d *= 2;
  return std::min(d, kMaxBackoff);
}

Status JobLifecycle::apply(Job& j, JobState to, Step step) {
  CARDIAC_TRY(check_transition(j.state, to));
  const JobState from = j.state;
  const TimeNs now = clock_.now();
  Job next = j;
  next.state = to;
  next.reason = std::move(step.reason);
  auto tx = store::Transaction::begin(db_);
  if (!tx) return fail(tx.error());
  Status st;
  if (to == JobState::kRunning) {
    next.attempt = j.attempt + 1;
    next.start_ns = now;
    if (!next.first_start_ns) next.first_start_ns = now;
    next.end_ns.reset();
    next.exit_code.reset();
    next.signal.reset();
    next.gpu_indices = step.gpus;
    next.gpu_uuids = step.uuids;
    next.runner_pid.reset();
    next.runner_start.reset();
    next.stop_action = StopAction::kNone;
    Attempt a;
    a.job = j.id;
    a.attempt = next.attempt;
    a.start_ns = now;
    a.gpu_indices = std::move(step.gpus);
    a.gpu_uuids = std::move(step.uuids);
    st = update_job(db_, next).and_then([&] { return insert_attempt(db_, a); });
  } else if (from == JobState::kRunning) {
    const TimeNs end = step.end_ns > 0 ? step.end_ns : now;
    if (step.charge && options_.charge) options_.charge(j, end);
    Attempt a;
    a.job = j.id;
    a.attempt = j.attempt;
    a.end_ns = end;
    a.exit_code = step.exit_code;
    a.signal = step.signal;
    a.outcome = outcome_of(to);
    a.reason = std::move(step.attempt_reason);
    next.stop_action = StopAction::kNone;
    if (to == JobState::kPending) {
      // Its submit time and eligibility are kept, so it goes back ahead of later jobs; a
      // backoff would let them take the GPUs first, so an expedited one gets none.
      next.not_before_ns = step.expedite ? 0 : now + backoff_for(j.restarts);
      ++next.restarts;
      next.end_ns.reset();
      next.exit_code.reset();
      next.signal.reset();
    } else {
      next.end_ns = end;
      next.exit_code = step.exit_code;
      next.signal = step.signal;
    }
    st = finish_attempt(db_, a).and_then([&] { return update_job(db_, next); });
  } else {
    // Age counts from the release: a held job accrues none (Slurm's accrue time).
    if (to == JobState::kPending) next.eligible_ns = now;
    if (is_terminal(to)) next.end_ns = now;
    st = update_job(db_, next);
  }
  if (st) st = tx->commit();
  if (!st) return fail(st.error());
  j = std::move(next);
  return {};
}

Status JobLifecycle::submit(Job& j) {
  j.state = JobState::kPending;
  j.submit_ns = clock_.now();
  auto tx = store::Transaction::begin(db_);
  if (!tx) return fail(tx.error());
  auto id = insert_job(db_, j);
  if (!id) return fail(id.error());
  CARDIAC_TRY(tx->commit());
  j.id = *id;
  return {};
}

Status JobLifecycle::hold(Job& j, std::string reason) {
  Step step;
  step.reason = std::move(reason);
  return apply(j, JobState::kHeld, std::move(step));
}

Status JobLifecycle::release(Job& j) {
  return apply(j, JobState::kPending, {});
}

Status JobLifecycle::cancel(Job& j, std::string reason) {
  if (j.state == JobState::kRunning) {
    return fail(
        Error::invalid(fmt::format("job {} is running: it is stopped, not cancelled", j.id)));
  }
  Step step;
  step.reason = std::move(reason);
  return apply(j, JobState::kCancelled, std::move(step));
}

Status JobLifecycle::start(Job& j, std::vector<unsigned> gpus, std::vector<std::string> uuids) {
  Step step;
  step.gpus = std::move(gpus);
  step.uuids = std::move(uuids);
  return apply(j, JobState::kRunning, std::move(step));
}

Status JobLifecycle::runner_failed(Job& j, std::string reason) {
  Step step;
  step.reason = reason;
  step.attempt_reason = std::move(reason);
  step.charge = false;  // nothing ran
  return apply(j, JobState::kFailed, std::move(step));
}

Status JobLifecycle::requeue_or_end(Job& j, Step step, JobState final_state) {
  const unsigned limit = options_.retry_limit;
  if (j.restarts < limit) {
    step.reason =
        fmt::format("{}; requeued ({} of {})", step.attempt_reason, j.restarts + 1, limit);
    return apply(j, JobState::kPending, std::move(step));
  }
  step.reason =
      fmt::format("{}; not requeued: retry limit of {} reached", step.attempt_reason, limit);
  return apply(j, final_state, std::move(step));
}

Status JobLifecycle::settle(Job& j, const ExitRecord& rec) {
  JobState natural = JobState::kFailed;
  std::string why;
  if (!rec.error.empty()) {
    why = rec.error;
  } else if (rec.timed_out) {
    natural = JobState::kTimeout;
    why = fmt::format("time limit of {} reached", format_duration(j.time_limit));
  } else if (rec.signal) {
    why = "killed by " + signal_text(*rec.signal);
  } else if (rec.exit_code && *rec.exit_code == 0) {
    natural = JobState::kCompleted;
  } else {
    why = fmt::format("exit code {}", rec.exit_code.value_or(-1));
  }
  const unsigned attempt = j.attempt;
  Step step;
  step.end_ns = rec.ended_ns;
  step.exit_code = rec.exit_code;
  step.signal = rec.signal;
  Status st;
  if (rec.stopped && j.stop_action == StopAction::kCancel) {
    step.reason = j.reason;
    step.attempt_reason = j.reason;
    st = apply(j, JobState::kCancelled, step);
  } else if (rec.stopped && j.stop_action == StopAction::kRequeue) {
    // Stopped because its GPU failed, not for anything it did: it keeps its place (Slurm's
    // expedited requeue).
    step.attempt_reason = j.reason;
    step.expedite = true;
    st = requeue_or_end(j, step, JobState::kFailed);
  } else if (rec.stopped && natural != JobState::kTimeout) {
    step.attempt_reason = "its runner was told to stop by someone else (system shutdown?)";
    st = requeue_or_end(j, step, JobState::kFailed);
  } else {
    step.reason = why;
    step.attempt_reason = why;
    st = apply(j, natural, step);
  }
  if (!st) return st;
  log::info("queue: job {} attempt {} ended: {}{}", j.id, attempt, outcome_of(j.state),
            step.attempt_reason.empty() ? "" : " (" + step.attempt_reason + ")");
  return {};
}

Status JobLifecycle::lose(Job& j) {
  Step step;
  Status st;
  if (j.stop_action == StopAction::kCancel) {
    step.reason = j.reason;
    step.attempt_reason = j.reason;
    st = apply(j, JobState::kCancelled, step);
  } else {
    const bool requeue = j.stop_action == StopAction::kRequeue;
    step.attempt_reason = requeue ? j.reason
                                  : "lost: its runner vanished without recording an end "
                                    "(killed, or the machine restarted)";
    step.expedite = requeue;
    st = requeue_or_end(j, step, JobState::kLost);
  }
  if (!st) return st;
  log::warn("queue: job {} attempt {}: {} → {}", j.id, j.attempt, step.attempt_reason,
            job_state_name(j.state));
  return {};
}

Status JobLifecycle::record_runner(Job& j, pid_t pid, std::int64_t start_ticks) {
  j.runner_pid = pid;
  j.runner_start = start_ticks;
  return update_job(db_, j);
}

Status JobLifecycle::request_stop(Job& j, StopAction action, std::string reason) {
  if (j.state != JobState::kRunning) {
    return fail(Error::invalid(
        fmt::format("job {} is {}: only a running job is stopped", j.id, job_state_name(j.state))));
  }
  j.stop_action = action;
  j.reason = std::move(reason);
  return update_job(db_, j);
}

Status JobLifecycle::note_eligible(Job& j, TimeNs at) {
  // Eligible once released and once its dependencies are met, whichever came later.
  TimeNs eligible = std::max(j.eligible_ns.value_or(j.submit_ns), at);
  if (j.eligible_ns == eligible) return {};
  j.eligible_ns = eligible;
  return update_job(db_, j);
}

}  // namespace cardiac::queue
