// SPDX-License-Identifier: Apache-2.0
// One pass of the queue loop: settle ended and vanished runners, fence GPUs with critical
// findings and requeue their jobs, then ask the policy which pending jobs start where.
#include "queue/queue_loop.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/format.h"
#include "core/log.h"
#include "core/time.h"
#include "nvml/pci.h"
#include "queue/job_store.h"
#include "queue/proc.h"
#include "queue/runner.h"
#include "queue/share_inputs.h"

namespace cardiac::queue {
namespace {

template <class T>
std::string join(const std::vector<T>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

}  // namespace

void SchedulingLoop::tick(bool woken) {
  // The view comes through the owner's callback, read before the shared lock is taken so that
  // the callback may take locks of its own; two passes can read it in one order and take the
  // lock in the other. Each view is numbered as it is read (both under view_mu_, so the numbers
  // follow the reads), and a pass whose view is older than one a pass already acted on does
  // nothing: acting on it would undo what the newer view showed (a recovered GPU's probe would
  // start over).
  std::uint64_t read_no = 0;
  MachineView view;
  {
    std::lock_guard numbering(view_mu_);
    read_no = ++views_read_;
    view = q_.machine();
  }
  std::lock_guard lock(q_.mu);
  if (!q_.db) return;
  if (read_no < view_acted_) return;
  view_acted_ = read_no;
  if (!woken && idle_) {
    if (view.report == last_report_) return;
    if (idle_pass(view)) return;
  }
  last_report_ = view.report;
  idle_ = false;
  reap_runners();
  auto running = jobs_in_states(*q_.db, {JobState::kRunning});
  if (!running) {
    log::error("queue: reading running jobs: {}", running.error().what());
    return;
  }
  none_running_ = running->empty();
  monitor(*running);
  auto fences = list_fences(*q_.db, false);
  if (!fences) log::error("queue: reading fences: {}", fences.error().what());
  fences_ = fences ? std::move(*fences) : std::vector<Fence>{};
  ClusterView v = cluster_now(view, *running);
  publish(v);
  if (view.report && view.report->nvml.available) {
    fence_and_stop(v, *running);
    if (q_.options.settings.auto_unfence) auto_unfence(v, view);
  }
  schedule(v, view);
}

void SchedulingLoop::note_request() {
  idle_ = false;
}

bool SchedulingLoop::idle_pass(const MachineView& view) {
  ClusterView v = cluster_now(view, {});
  const bool health_work =
      view.report && view.report->nvml.available && (!v.critical.empty() || !fences_.empty());
  if (health_work) return false;
  last_report_ = view.report;
  reap_runners();
  publish(v);
  q_.reasons.clear();
  q_.last = {};
  q_.blocked = blocked_by(view).value_or("");
  return true;
}

void SchedulingLoop::publish(const ClusterView& v) {
  q_.fenced = v.fenced;
  q_.busy_outside = v.busy_outside;
  q_.alerting = v.alerting;
  q_.utilization = v.utilization;
}

std::optional<std::string> SchedulingLoop::blocked_by(const MachineView& view) {
  if (!view.report) return "waiting for the agent's first GPU sample";
  if (!view.report->nvml.available) return "NVML is not usable: " + view.report->nvml.error;
  return std::nullopt;
}

namespace {

// The health probe a fenced GPU passes to return to service by itself: NVML answers it
// normally and its recovery action is NONE (a driver too old to say, before 550, never passes:
// an unknown action is not "none"), no memory repair waits for a reset, and nothing critical
// (a new fencing Xid since the last clear included) is seen now.
bool passes_probe(const nvml::GpuReading& g, const ClusterView& v) {
  return g.health == nvml::DeviceHealth::kOk && g.recovery_action == 0U &&
         !g.retired_pages_pending.value_or(false) && !g.remapped_rows_pending.value_or(false) &&
         !v.critical.count(g.index);
}

}  // namespace

void SchedulingLoop::auto_unfence(const ClusterView& v, const MachineView& view) {
  const TimeNs now = q_.clock.now();
  auto fences = list_fences(*q_.db, false);
  if (!fences) {
    log::error("queue: reading fences: {}", fences.error().what());
    return;
  }
  std::map<unsigned, TimeNs> still;
  for (const auto& gs : view.report->gpus) {
    const nvml::GpuReading& g = gs.reading;
    std::vector<const Fence*> mine;
    for (const auto& f : *fences) {
      if (fence_matches(f, g.index, g.uuid)) mine.push_back(&f);
    }
    if (mine.empty()) continue;
    // A person's fence stays until a person clears it; so does one for a fault that needs a
    // reset, a reboot or the card serviced.
    const bool may_lift = std::all_of(mine.begin(), mine.end(), [](const Fence* f) {
      return f->automatic && fence_may_lift(f->reason);
    });
    if (!may_lift || !passes_probe(g, v)) continue;
    auto since = recovered_since_.find(g.index);
    const TimeNs from = since != recovered_since_.end() ? since->second : now;
    if (now - from < q_.options.settings.auto_unfence_after) {
      still[g.index] = from;
      continue;
    }
    auto n = clear_fences(*q_.db, g.index, g.uuid, kAutoUnfenceWho, now);
    if (!n) {
      log::error("queue: auto-unfence of GPU {}: {}", g.index, n.error().what());
      continue;
    }
    const std::string why = fmt::format("auto-unfence: fenced for \"{}\", healthy for {}",
                                        mine.front()->reason, format_duration(now - from));
    log::info("queue: GPU {} returned to service by {}", g.index, why);
    // As a person's clear: the Xids seen so far are dealt with, only new ones fence it again.
    const std::string bus = nvml::normalize_pci_bus_id(g.pci_bus_id);
    for (const auto& [key, count] : view.xid_counts) {
      if (!bus.empty() && nvml::normalize_pci_bus_id(key.first) == bus) q_.xid_acked[key] = count;
    }
    if (q_.options.on_fence) {
      q_.options.on_fence({false, g.index, g.uuid, why, kAutoUnfenceWho, true, now});
    }
  }
  recovered_since_ = std::move(still);
}

void SchedulingLoop::reap_runners() {
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

void SchedulingLoop::monitor(std::vector<Job>& running) {
  std::vector<Job> still;
  for (auto& j : running) {
    const JobPaths paths = job_paths(q_.options.state_dir, j.id);
    auto settled = [&]() -> bool {
      auto rec = read_exit_record(paths.exit);
      if (!rec) {
        log::warn("queue: job {}: {}", j.id, rec.error().what());
        return false;
      }
      if (!*rec || (*rec)->attempt != j.attempt) return false;
      if (auto st = q_.jobs->settle(j, **rec); !st) {
        log::error("queue: recording the end of job {}: {}", j.id, st.error().what());
        return true;
      }
      ::unlink(paths.exit.c_str());
      ::unlink(paths.spec.c_str());
      return true;
    };
    if (settled()) continue;
    if (j.runner_pid && process_alive(*j.runner_pid, j.runner_start.value_or(-1))) {
      still.push_back(std::move(j));
      continue;
    }
    // The runner may have written its record and exited since the first look.
    if (settled()) continue;
    // Whatever the runner left in its session must not keep the GPUs.
    if (j.runner_pid) signal_session(*j.runner_pid, j.runner_start.value_or(0), SIGKILL);
    if (auto st = q_.jobs->lose(j); !st) {
      log::error("queue: recording lost job {}: {}", j.id, st.error().what());
      continue;
    }
    ::unlink(paths.spec.c_str());
  }
  running = std::move(still);
}

ClusterView SchedulingLoop::cluster_now(const MachineView& view, const std::vector<Job>& running) {
  ClusterInput in;
  in.report = view.report.get();
  for (const auto& [key, count] : view.xid_counts) {
    auto acked = q_.xid_acked.find(key);
    std::uint64_t seen = acked != q_.xid_acked.end() ? acked->second : 0;
    if (count > seen) in.xid_counts[key] = count - seen;
  }
  in.fences = fences_;
  in.critical_alerts = view.critical_alerts;
  in.running = running;
  in.count_outside = q_.options.settings.count_outside_processes;
  in.hostname = q_.options.hostname;
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

void SchedulingLoop::fence_and_stop(const ClusterView& v, const std::vector<Job>& running) {
  TimeNs now = q_.clock.now();
  std::map<unsigned, std::string> evacuate;
  auto fences = list_fences(*q_.db, false);
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
    if (auto id = add_fence(*q_.db, f); !id) {
      log::error("queue: fencing GPU {}: {}", idx, id.error().what());
    } else {
      log::warn("queue: GPU {} fenced: {}", idx, why);
      if (q_.options.on_fence) q_.options.on_fence({true, idx, uuid, why, f.who, true, now});
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
    if (!why.empty()) q_.stop_job(j, StopAction::kRequeue, why);
  }
}

void SchedulingLoop::schedule(const ClusterView& v, const MachineView& view) {
  q_.reasons.clear();
  q_.blocked.clear();
  q_.last = {};
  if (auto why = blocked_by(view)) {
    q_.blocked = std::move(*why);
    return;
  }
  auto queued = jobs_in_states(*q_.db, {JobState::kPending, JobState::kHeld});
  if (!queued) {
    log::error("queue: reading pending jobs: {}", queued.error().what());
    return;
  }
  idle_ = none_running_ && queued->empty();
  TimeNs now = q_.clock.now();
  std::map<JobId, Job> by_id;
  std::map<JobId, DepState> deps;
  std::vector<sched::Job> input;
  std::set<JobId> finished_ok;
  for (auto& j : *queued) {
    if (j.state == JobState::kPending && j.not_before_ns > now) {
      q_.reasons[j.id] =
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
      q_.reasons[j.id] = never;
      continue;
    }
    if (!j.after.empty() && met) {
      if (auto st = q_.jobs->note_eligible(j, met_at > 0 ? met_at : now); !st) {
        log::warn("queue: job {}: {}", j.id, st.error().what());
      }
    }
    sched::Job sj = to_sched_job(j);
    // Waiting on a dependency accrues no age (Slurm's accrue time starts once it is met).
    if (!met) sj.eligible_time = now;
    input.push_back(std::move(sj));
    by_id.emplace(j.id, std::move(j));
  }
  if (input.empty()) return;
  q_.last = order_.pass(v.cluster, input, usage_now(*q_.db, q_.policy, q_.options.settings, now),
                        q_.policy, now, std::vector<JobId>(finished_ok.begin(), finished_ok.end()));
  for (const auto& s : q_.last.starts) {
    auto it = by_id.find(s.job);
    if (it == by_id.end() || s.placement.empty()) continue;
    start_job(it->second, s.placement.front().gpus, v);
  }
}

SchedulingLoop::DepState SchedulingLoop::dep_state(JobId dep) {
  auto d = get_job(*q_.db, dep);
  if (!d || !*d) return {};
  return {(*d)->state, (*d)->end_ns.value_or(0)};
}

bool SchedulingLoop::start_job(Job j, const std::vector<unsigned>& gpus, const ClusterView& v) {
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
  spec.grace = q_.options.settings.grace;
  const JobPaths paths = job_paths(q_.options.state_dir, j.id);
  ::unlink(paths.exit.c_str());
  if (auto st = write_file_atomically(paths.spec, to_json(spec).dump()); !st) {
    log::error("queue: job {}: {}", j.id, st.error().what());
    return false;
  }
  const bool first = !j.first_start_ns;
  // Recorded before the runner starts: a crash in between leaves a running job without a
  // runner, which the next start finds (or settles as lost), never a job started twice.
  if (auto st = q_.jobs->start(j, gpus, uuids); !st) {
    log::error("queue: starting job {}: {}", j.id, st.error().what());
    return false;
  }
  auto runner = launch_runner(q_.options.executable, q_.options.state_dir, j.id, attempt);
  if (!runner) {
    std::string why = "cannot start the job runner: " + runner.error().what();
    (void)q_.jobs->runner_failed(j, why);
    log::error("queue: job {}: {}", j.id, why);
    return false;
  }
  spawned_.insert(runner->pid);
  if (auto u = q_.jobs->record_runner(j, runner->pid, runner->start_ticks); !u) {
    log::error("queue: job {}: {}", j.id, u.error().what());
  }
  if (first) {
    double wait = static_cast<double>(*j.start_ns - j.submit_ns) / 1e9;
    const auto& bounds = wait_bounds_seconds();
    std::size_t b = 0;
    while (b < bounds.size() && wait > bounds[b]) ++b;
    ++q_.wait_counts[b];
    q_.wait_sum += wait;
  }
  log::info("queue: started job {} attempt {} on GPUs {} (runner pid {})", j.id, attempt,
            join(gpus), runner->pid);
  return true;
}

void SchedulingLoop::adopt() {
  auto running = jobs_in_states(*q_.db, {JobState::kRunning});
  if (!running) {
    log::error("queue: cannot read running jobs: {}", running.error().what());
    return;
  }
  for (auto& j : *running) {
    if (!j.runner_pid) {
      // The agent died between recording the start and recording the runner: find it.
      if (auto found = find_runner(q_.options.state_dir, j.id, j.attempt)) {
        (void)q_.jobs->record_runner(j, found->pid, found->start_ticks);
      }
    }
    if (j.runner_pid && process_alive(*j.runner_pid, j.runner_start.value_or(-1))) {
      log::info("queue: adopted job {} (runner pid {})", j.id, *j.runner_pid);
    }
  }
  // Runners that ended or vanished while no agent was watching are settled by the first tick.
}

}  // namespace cardiac::queue
