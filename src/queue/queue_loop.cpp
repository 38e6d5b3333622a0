// SPDX-License-Identifier: Apache-2.0
// One pass of the queue loop: settle ended and vanished runners, fence GPUs with critical
// findings and requeue their jobs, then ask the policy which pending jobs start where.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/format.h"
#include "core/log.h"
#include "core/time.h"
#include "queue/share_inputs.h"
#include "queue/proc.h"
#include "queue/queue.h"
#include "queue/runner.h"

namespace cardiac::queue {
namespace {

constexpr DurationNs kMaxBackoff = 600 * kNsPerSec;

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? fmt::format("signal {} (SIG{})", sig, name) : fmt::format("signal {}", sig);
}

template <class T>
std::string join(const std::vector<T>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

}  // namespace

DurationNs Queue::backoff_for(unsigned restarts) const {
  DurationNs d = options_.settings.backoff;
  for (unsigned i = 0; i < restarts && d < kMaxBackoff; ++i) d *= 2;
  return std::min(d, kMaxBackoff);
}

void Queue::tick() {
  MachineView view = view_ ? view_() : MachineView{};
  std::lock_guard lock(mu_);
  if (!db_) return;
  reap_runners();
  auto running = jobs_in_states(*db_, {JobState::kRunning});
  if (!running) {
    log::error("queue: reading running jobs: {}", running.error().what());
    return;
  }
  monitor(*running);
  ClusterView v = cluster_now(view, *running);
  fenced_ = v.fenced;
  busy_outside_ = v.busy_outside;
  alerting_ = v.alerting;
  utilization_ = v.utilization;
  if (view.report && view.report->nvml.available) fence_and_stop(v, *running);
  schedule(v, view);
}

void Queue::reap_runners() {
  for (auto it = spawned_.begin(); it != spawned_.end();) {
    int status = 0;
    pid_t r = waitpid(*it, &status, WNOHANG);
    if (r == *it || (r < 0 && errno == ECHILD)) {
      it = spawned_.erase(it);
    } else {
      ++it;
    }
  }
}

void Queue::monitor(std::vector<Job>& running) {
  std::vector<Job> still;
  for (auto& j : running) {
    const JobPaths paths = job_paths(options_.state_dir, j.id);
    auto settled = [&]() -> bool {
      auto rec = read_exit_record(paths.exit);
      if (!rec) {
        log::warn("queue: job {}: {}", j.id, rec.error().what());
        return false;
      }
      if (!*rec || (*rec)->attempt != j.attempt) return false;
      finish(j, **rec);
      return true;
    };
    if (settled()) continue;
    if (j.runner_pid && process_alive(*j.runner_pid, j.runner_start.value_or(-1))) {
      still.push_back(std::move(j));
      continue;
    }
    // The runner may have written its record and exited since the first look.
    if (settled()) continue;
    lost(std::move(j));
  }
  running = std::move(still);
}

void Queue::finish(Job j, const ExitRecord& rec) {
  TimeNs end = rec.ended_ns > 0 ? rec.ended_ns : clock_.now();
  Attempt a;
  a.job = j.id;
  a.attempt = j.attempt;
  a.end_ns = end;
  a.exit_code = rec.exit_code;
  a.signal = rec.signal;
  j.end_ns = end;
  j.exit_code = rec.exit_code;
  j.signal = rec.signal;

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

  auto tx = store::Transaction::begin(*db_);
  if (!tx) {
    log::error("queue: job {}: {}", j.id, tx.error().what());
    return;
  }
  charge(j, end);
  if (rec.stopped && j.stop_action == StopAction::kCancel) {
    j.state = JobState::kCancelled;
    a.outcome = "cancelled";
    a.reason = j.reason;
  } else if (rec.stopped && j.stop_action == StopAction::kRequeue) {
    requeue_or_end(j, a, j.reason, JobState::kFailed, /*expedite=*/true);
  } else if (rec.stopped && natural != JobState::kTimeout) {
    requeue_or_end(j, a, "its runner was told to stop by someone else (system shutdown?)",
                   JobState::kFailed);
  } else {
    j.state = natural;
    j.reason = why;
    a.outcome = std::string(job_state_name(natural));
    a.reason = why;
  }
  j.stop_action = StopAction::kNone;
  auto st = finish_attempt(*db_, a).and_then([&] { return update_job(*db_, j); });
  if (st) st = tx->commit();
  if (!st) {
    log::error("queue: recording the end of job {}: {}", j.id, st.error().what());
    return;
  }
  const JobPaths paths = job_paths(options_.state_dir, j.id);
  ::unlink(paths.exit.c_str());
  ::unlink(paths.spec.c_str());
  log::info("queue: job {} attempt {} ended: {}{}", j.id, a.attempt, a.outcome,
            a.reason.empty() ? "" : " (" + a.reason + ")");
}

void Queue::requeue_or_end(Job& j, Attempt& a, const std::string& why, JobState final_state,
                           bool expedite) {
  const unsigned limit = options_.settings.retry_limit;
  a.reason = why;
  if (j.restarts < limit) {
    // Its submit time and eligibility are kept, so it goes back ahead of later jobs; a backoff
    // would let them take the GPUs first.
    j.not_before_ns = expedite ? 0 : clock_.now() + backoff_for(j.restarts);
    ++j.restarts;
    j.state = JobState::kPending;
    j.reason = fmt::format("{}; requeued ({} of {})", why, j.restarts, limit);
    j.end_ns.reset();
    j.exit_code.reset();
    j.signal.reset();
    a.outcome = "requeued";
  } else {
    j.state = final_state;
    j.reason = fmt::format("{}; not requeued: retry limit of {} reached", why, limit);
    a.outcome = std::string(job_state_name(final_state));
  }
  j.stop_action = StopAction::kNone;
}

void Queue::lost(Job j) {
  TimeNs now = clock_.now();
  // Whatever the runner left in its session must not keep the GPUs.
  if (j.runner_pid) signal_session(*j.runner_pid, j.runner_start.value_or(0), SIGKILL);
  Attempt a;
  a.job = j.id;
  a.attempt = j.attempt;
  a.end_ns = now;
  auto tx = store::Transaction::begin(*db_);
  if (!tx) {
    log::error("queue: job {}: {}", j.id, tx.error().what());
    return;
  }
  charge(j, now);
  if (j.stop_action == StopAction::kCancel) {
    j.state = JobState::kCancelled;
    j.end_ns = now;
    a.outcome = "cancelled";
    a.reason = j.reason;
  } else {
    std::string why = j.stop_action == StopAction::kRequeue
                          ? j.reason
                          : "lost: its runner vanished without recording an end (killed, or the "
                            "machine restarted)";
    requeue_or_end(j, a, why, JobState::kLost, j.stop_action == StopAction::kRequeue);
    if (j.state == JobState::kLost) j.end_ns = now;
  }
  auto st = finish_attempt(*db_, a).and_then([&] { return update_job(*db_, j); });
  if (st) st = tx->commit();
  if (!st) {
    log::error("queue: recording lost job {}: {}", j.id, st.error().what());
    return;
  }
  ::unlink(job_paths(options_.state_dir, j.id).spec.c_str());
  log::warn("queue: job {} attempt {}: {} → {}", j.id, a.attempt, a.reason,
            job_state_name(j.state));
}

ClusterView Queue::cluster_now(const MachineView& view, const std::vector<Job>& running) {
  ClusterInput in;
  in.report = view.report.get();
  for (const auto& [key, count] : view.xid_counts) {
    auto acked = xid_acked_.find(key);
    std::uint64_t seen = acked != xid_acked_.end() ? acked->second : 0;
    if (count > seen) in.xid_counts[key] = count - seen;
  }
  if (auto f = list_fences(*db_, false)) in.fences = std::move(*f);
  in.critical_alerts = view.critical_alerts;
  in.running = running;
  in.count_outside = options_.settings.count_outside_processes;
  in.hostname = options_.hostname;
  std::set<pid_t> runners;
  for (const auto& j : running) {
    if (j.runner_pid) runners.insert(*j.runner_pid);
  }
  in.is_queue_or_gone = [runners](std::uint32_t pid) {
    auto p = static_cast<pid_t>(pid);
    return !read_proc_stat(p) || belongs_to_runner(p, runners);
  };
  return build_cluster(in);
}

void Queue::fence_and_stop(const ClusterView& v, const std::vector<Job>& running) {
  TimeNs now = clock_.now();
  std::map<unsigned, std::string> evacuate;
  auto fences = list_fences(*db_, false);
  if (!fences) {
    log::error("queue: reading fences: {}", fences.error().what());
    return;
  }
  for (const auto& [gpu, why] : v.critical) {
    const unsigned idx = gpu;
    evacuate[idx] = why;
    auto u = v.uuid_of.find(idx);
    std::string uuid = u != v.uuid_of.end() ? u->second : "";
    bool known = std::any_of(fences->begin(), fences->end(), [&](const Fence& f) {
      return f.automatic && fence_matches(f, idx, uuid);
    });
    if (known) continue;
    Fence f;
    f.gpu = idx;
    f.uuid = uuid;
    f.reason = why;
    f.who = "cardiac (automatic)";
    f.automatic = true;
    f.created_ns = now;
    if (auto id = add_fence(*db_, f); !id) {
      log::error("queue: fencing GPU {}: {}", idx, id.error().what());
    } else {
      log::warn("queue: GPU {} fenced: {}", idx, why);
      if (options_.on_fence) options_.on_fence({true, idx, uuid, why, f.who, true, now});
    }
  }
  for (const auto& f : *fences) {
    if (!f.automatic) continue;  // a person's fence drains: running jobs finish
    for (const auto& [idx, uuid] : v.uuid_of) {
      if (fence_matches(f, idx, uuid)) evacuate.emplace(idx, f.reason);
    }
    if (f.uuid.empty() || !v.uuid_of.count(f.gpu)) evacuate.emplace(f.gpu, f.reason);
  }
  for (auto j : running) {
    if (j.stop_action != StopAction::kNone) continue;
    std::string why;
    for (std::size_t i = 0; i < j.gpu_indices.size() && why.empty(); ++i) {
      std::string uuid = i < j.gpu_uuids.size() ? j.gpu_uuids[i] : "";
      auto idx = current_index(v, uuid, j.gpu_indices[i]);
      if (!idx) {
        why = fmt::format("GPU {} ({}) is gone from NVML", j.gpu_indices[i], uuid);
      } else if (auto e = evacuate.find(*idx); e != evacuate.end()) {
        why = fmt::format("GPU {} fenced: {}", *idx, e->second);
      }
    }
    if (!why.empty()) stop_job(j, StopAction::kRequeue, why);
  }
}

void Queue::stop_job(Job& j, StopAction action, const std::string& reason) {
  j.stop_action = action;
  j.reason = reason;
  if (auto st = update_job(*db_, j); !st) {
    log::error("queue: job {}: {}", j.id, st.error().what());
    return;
  }
  if (j.runner_pid && process_alive(*j.runner_pid, j.runner_start.value_or(-1))) {
    ::kill(*j.runner_pid, SIGTERM);
  }
  log::info("queue: stopping job {} ({}): {}", j.id, stop_action_name(action), reason);
}

sched::Usage Queue::usage_now(TimeNs now) {
  sched::Usage u;
  if (auto rows = load_usage(*db_)) {
    for (const auto& [user, row] : *rows) {
      u.usage[user] = row.decayed;
      u.updated_at = std::max(u.updated_at, row.updated_ns);
    }
  }
  if (u.updated_at == 0) u.updated_at = now;
  sched::decay_usage(u, now, policy_.half_life);
  add_tree(u, options_.settings);
  return u;
}

void Queue::charge(const Job& j, TimeNs end) {
  if (!j.start_ns || end <= *j.start_ns) return;
  double gpu_seconds =
      static_cast<double>(j.gpu_indices.size()) * static_cast<double>(end - *j.start_ns) / 1e9;
  TimeNs now = clock_.now();
  auto rows = load_usage(*db_);
  if (!rows) return;
  sched::Usage u = usage_now(now);
  sched::charge_usage(u, j.user, gpu_seconds);
  for (const auto& [user, decayed] : u.usage) {
    UsageRow row = (*rows)[user];
    row.decayed = decayed;
    row.updated_ns = now;
    if (user == j.user) row.total_gpu_seconds += gpu_seconds;
    if (auto st = save_usage(*db_, user, row); !st) {
      log::warn("queue: usage of {}: {}", user, st.error().what());
    }
  }
}

void Queue::schedule(const ClusterView& v, const MachineView& view) {
  reasons_.clear();
  blocked_.clear();
  last_ = {};
  if (!view.report) {
    blocked_ = "waiting for the agent's first GPU sample";
    return;
  }
  if (!view.report->nvml.available) {
    blocked_ = "NVML is not usable: " + view.report->nvml.error;
    return;
  }
  auto queued = jobs_in_states(*db_, {JobState::kPending, JobState::kHeld});
  if (!queued) {
    log::error("queue: reading pending jobs: {}", queued.error().what());
    return;
  }
  TimeNs now = clock_.now();
  std::map<JobId, Job> by_id;
  std::map<JobId, DepState> deps;
  std::vector<sched::Job> input;
  std::set<JobId> finished_ok;
  for (auto& j : *queued) {
    if (j.state == JobState::kPending && j.not_before_ns > now) {
      reasons_[j.id] =
          fmt::format("{}; backing off until {}", j.reason, format_iso8601(j.not_before_ns));
      continue;
    }
    std::string never;
    bool met = true;
    TimeNs met_at = 0;  // when the last dependency completed
    for (JobId dep : j.after) {
      if (!deps.count(dep)) deps[dep] = dep_state(dep);
      const DepState& d = deps[dep];
      if (d.state == JobState::kCompleted) {
        finished_ok.insert(dep);
        met_at = std::max(met_at, d.end_ns);
      } else {
        met = false;
        if (!d.state || is_terminal(*d.state)) {
          never = fmt::format("dependency {} ended {}: this job can never start (cancel it)", dep,
                              d.state ? job_state_name(*d.state) : "missing");
        }
      }
    }
    if (!never.empty()) {
      reasons_[j.id] = never;
      continue;
    }
    if (!j.after.empty() && met) note_eligible(j, met_at > 0 ? met_at : now);
    sched::Job sj = to_sched_job(j);
    // Waiting on a dependency accrues no age (Slurm's accrue time starts once it is met).
    if (!met) sj.eligible_time = now;
    input.push_back(std::move(sj));
    by_id.emplace(j.id, std::move(j));
  }
  if (input.empty()) return;
  last_ = sched::schedule(v.cluster, input, usage_now(now), policy_, now,
                          std::vector<JobId>(finished_ok.begin(), finished_ok.end()));
  for (const auto& [id, why] : last_.reasons) reasons_.emplace(id, why);
  for (const auto& s : last_.starts) {
    auto it = by_id.find(s.job);
    if (it == by_id.end() || s.placement.empty()) continue;
    start_job(it->second, s.placement.front().gpus, v);
  }
}

Queue::DepState Queue::dep_state(JobId dep) {
  auto d = get_job(*db_, dep);
  if (!d || !*d) return {};
  return {(*d)->state, (*d)->end_ns.value_or(0)};
}

void Queue::note_eligible(Job& j, TimeNs at) {
  // Eligible once released and once its dependencies are met, whichever came later.
  TimeNs eligible = std::max(j.eligible_ns.value_or(j.submit_ns), at);
  if (j.eligible_ns == eligible) return;
  j.eligible_ns = eligible;
  if (auto st = update_job(*db_, j); !st) log::warn("queue: job {}: {}", j.id, st.error().what());
}

bool Queue::start_job(Job j, const std::vector<unsigned>& gpus, const ClusterView& v) {
  const unsigned attempt = j.attempt + 1;
  std::vector<std::string> uuids;
  for (unsigned g : gpus) {
    auto u = v.uuid_of.find(g);
    if (u != v.uuid_of.end()) uuids.push_back(u->second);
  }
  RunSpec spec;
  spec.job = j.id;
  spec.attempt = attempt;
  spec.argv = j.argv;
  spec.env = j.env;
  // UUIDs: stable whatever the job's CUDA_DEVICE_ORDER and however NVML numbers the GPUs.
  spec.env["CUDA_VISIBLE_DEVICES"] = uuids.size() == gpus.size() ? join(uuids) : join(gpus);
  spec.env["CARDIAC_JOB_ID"] = std::to_string(j.id);
  spec.env["CARDIAC_JOB_ATTEMPT"] = std::to_string(attempt);
  spec.env["CARDIAC_GPU_INDICES"] = join(gpus);
  spec.cwd = j.cwd;
  spec.switch_user = geteuid() == 0;
  spec.uid = j.uid;
  spec.gid = j.gid;
  spec.groups = j.groups;
  spec.time_limit = j.time_limit;
  spec.grace = options_.settings.grace;
  const JobPaths paths = job_paths(options_.state_dir, j.id);
  ::unlink(paths.exit.c_str());
  if (auto st = write_file_atomically(paths.spec, to_json(spec).dump()); !st) {
    log::error("queue: job {}: {}", j.id, st.error().what());
    return false;
  }
  TimeNs now = clock_.now();
  const bool first = !j.first_start_ns;
  j.state = JobState::kRunning;
  j.attempt = attempt;
  j.start_ns = now;
  if (first) j.first_start_ns = now;
  j.end_ns.reset();
  j.exit_code.reset();
  j.signal.reset();
  j.gpu_indices = gpus;
  j.gpu_uuids = uuids;
  j.runner_pid.reset();
  j.runner_start.reset();
  j.stop_action = StopAction::kNone;
  j.reason.clear();
  Attempt a;
  a.job = j.id;
  a.attempt = attempt;
  a.start_ns = now;
  a.gpu_indices = gpus;
  a.gpu_uuids = uuids;
  // Recorded before the runner starts: a crash in between leaves a running job without a
  // runner, which the next start finds (or settles as lost), never a job started twice.
  auto tx = store::Transaction::begin(*db_);
  Status st = tx ? update_job(*db_, j).and_then([&] { return insert_attempt(*db_, a); })
                 : Status(fail(tx.error()));
  if (st) st = tx->commit();
  if (!st) {
    log::error("queue: starting job {}: {}", j.id, st.error().what());
    return false;
  }
  auto runner = launch_runner(options_.executable, options_.state_dir, j.id, attempt);
  if (!runner) {
    j.state = JobState::kFailed;
    j.end_ns = clock_.now();
    j.reason = "cannot start the job runner: " + runner.error().what();
    a.end_ns = j.end_ns;
    a.outcome = "failed";
    a.reason = j.reason;
    (void)finish_attempt(*db_, a);
    (void)update_job(*db_, j);
    log::error("queue: job {}: {}", j.id, j.reason);
    return false;
  }
  spawned_.insert(runner->pid);
  j.runner_pid = runner->pid;
  j.runner_start = runner->start_ticks;
  if (auto u = update_job(*db_, j); !u) log::error("queue: job {}: {}", j.id, u.error().what());
  if (first) {
    double wait = static_cast<double>(now - j.submit_ns) / 1e9;
    const auto& bounds = wait_bounds_seconds();
    std::size_t b = 0;
    while (b < bounds.size() && wait > bounds[b]) ++b;
    ++wait_counts_[b];
    wait_sum_ += wait;
  }
  log::info("queue: started job {} attempt {} on GPUs {} (runner pid {})", j.id, attempt,
            join(gpus), runner->pid);
  return true;
}

}  // namespace cardiac::queue
