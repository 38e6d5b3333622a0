// SPDX-License-Identifier: Apache-2.0
// The event loop: arrivals, ends, failures, detections, repairs and maintenance in time
// order; one scheduling pass after every instant at which something changed.
#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>

#include "sched/session.h"
#include "sim/engine_detail.h"
#include "sim/pending_queue.h"

namespace cardiac::sim {
namespace {

using detail::JobState;
using detail::Phase;

enum class Ev : std::uint8_t { kEnd, kDetect, kRepair, kMaintEnd, kBackfill, kSlowDetect };

// The interruption cause of a job stopped because a straggler in it was found.
constexpr std::string_view kSlowCause = "Fail-slow GPU";

struct Event {
  TimeNs time = 0;
  std::uint64_t seq = 0;
  Ev kind = Ev::kEnd;
  std::uint32_t a = 0;  // job index, or flat GPU, or node
  std::uint32_t gen = 0;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

double gpu_count(const sched::Cluster& c) {
  double n = 0;
  for (const sched::Node& node : c.nodes) n += static_cast<double>(node.gpus.size());
  return n;
}

bool needs_usage(const sched::PolicyConfig& p) {
  return p.order == sched::Order::kPriority || p.order == sched::Order::kFairshare;
}

class Engine {
 public:
  Engine(const SimConfig& config, const std::vector<TraceJob>& trace, const Progress& progress)
      : cfg_(config),
        trace_(trace),
        progress_(progress),
        session_(detail::build_nodes(config)),
        queue_(config.policy, config.priority_calc_period, gpu_count(session_.cluster())) {
    session_.set_start_placements(false);
  }

  Result<SimResult> run();

 private:
  void push(TimeNs t, Ev kind, std::uint32_t a, std::uint32_t gen = 0) {
    events_.push(Event{.time = t, .seq = seq_++, .kind = kind, .a = a, .gen = gen});
  }
  void enqueue(std::uint32_t j, TimeNs now);
  // `gpus`: the session's flat GPU indices of the start.
  void start(const sched::Start& s, const std::vector<unsigned>& gpus, TimeNs now);
  void finish(std::uint32_t j, TimeNs now);
  void interrupt(std::uint32_t j, TimeNs now, const std::string& cause, DurationNs hang);
  void requeue(std::uint32_t j, TimeNs now);
  // A run ends, whatever the reason: GPUs free, usage charged.
  void leave(std::uint32_t j, TimeNs now);
  void on_failure(const FailureEvent& f);
  // A GPU turns into a straggler; later it is detected and taken out.
  void on_slow(const SlowEvent& e);
  void detect_slow(unsigned gpu, TimeNs now);
  // The running job goes at a straggler's pace from now: its end moves out (not past its time
  // limit). Returns false when it already did.
  bool stretch(std::uint32_t j, TimeNs now);
  void take_down(unsigned gpu, TimeNs until, bool maintenance);
  void bring_up(unsigned gpu, TimeNs now);
  void pass(TimeNs now);
  void sample(TimeNs now);
  [[nodiscard]] double tau_for(unsigned gpus);

  const SimConfig& cfg_;
  const std::vector<TraceJob>& trace_;
  const Progress& progress_;
  sched::Session session_;
  std::vector<JobState> jobs_;
  // Pending jobs in policy order: a pass reads only what it looks at.
  detail::PendingQueue queue_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  detail::Gpus gpus_;
  sched::Usage usage_;
  bool use_usage_ = false;
  bool dirty_ = false;
  // The last pass stopped at a job in strict order (ScheduleResult::blocker).
  bool blocked_ = false;
  bool only_arrivals_ = true;
  unsigned head_gpus_ = 0;  // GPUs of that job
  std::size_t running_ = 0;
  unsigned slow_gpus_ = 0;             // stragglers not yet detected
  std::vector<detail::SlowGpu> slow_;  // by flat GPU; empty without stragglers
  std::map<unsigned, double> tau_cache_;
  // By the job's shape: GPUs, nodes, memory per GPU, shared, the trace's GPU types.
  std::map<std::tuple<unsigned, unsigned, std::uint64_t, bool, std::string>, bool> feasible_;
  detail::Accounts acc_;
  std::vector<SeriesPoint> series_;
  std::uint64_t step_interruptions_ = 0;
  TimeNs last_backfill_ = std::numeric_limits<TimeNs>::min() / 2;
  bool backfill_due_ = false;  // a backfill wake-up is queued
};

double Engine::tau_for(unsigned gpus) {
  auto it = tau_cache_.find(gpus);
  if (it != tau_cache_.end()) return it->second;
  const double mtbf_s =
      job_mttf_hours(cfg_.failures, gpus, cfg_.cluster.types.front().gpus_per_node) * 3600.0;
  // Without failures Young and Daly have nothing to save; none and fixed are what they say.
  const bool optimum = cfg_.checkpoint.kind == CheckpointPolicy::kYoung ||
                       cfg_.checkpoint.kind == CheckpointPolicy::kDaly;
  const double tau = optimum && !std::isfinite(mtbf_s) ? std::numeric_limits<double>::infinity()
                                                       : interval_for(cfg_.checkpoint, mtbf_s);
  tau_cache_.emplace(gpus, tau);
  return tau;
}

void Engine::enqueue(std::uint32_t j, TimeNs now) {
  JobState& s = jobs_[j];
  const TraceJob& t = trace_[j];
  s.phase = Phase::kPending;
  s.tau_s = tau_for(t.gpus);
  s.seg_restart = s.restarts > 0 ? detail::seconds_ns(cfg_.checkpoint.restart_s) : 0;
  const detail::Segment seg = detail::plan_segment(s, t, cfg_.checkpoint);
  sched::Job job = detail::to_sched_job(j, t, s, cfg_, seg.wall);
  // A job no node set of the cluster could ever hold stays out of the queue: it would never
  // start, and strict-order policies would keep looking at it on every pass.
  auto key = std::make_tuple(job.gpus, job.nodes, job.gpu_memory, job.shared, t.gpu_type);
  auto it = feasible_.find(key);
  if (it == feasible_.end()) {
    it = feasible_.emplace(std::move(key), sched::feasible(session_.cluster(), job).has_value())
             .first;
  }
  if (!it->second) {
    s.phase = Phase::kImpossible;
    ++acc_.impossible;
    return;
  }
  // In policy order (under FCFS a requeued job goes back to its place), so the strict-order
  // shortcuts below see the true head.
  if (queue_.push(std::move(job), usage_, now)) head_gpus_ = 0;  // ahead of jobs waiting
  dirty_ = true;
}

void Engine::start(const sched::Start& st, const std::vector<unsigned>& gpus, TimeNs now) {
  const auto j = static_cast<std::uint32_t>(st.job);
  JobState& s = jobs_[j];
  const TraceJob& t = trace_[j];
  s.phase = Phase::kRunning;
  s.seg_start = now;
  if (s.first_start < 0) s.first_start = now;
  // The session numbers GPUs as this engine does (nodes in order, then position); kept in
  // increasing order as the placement listed them, so that what reads them sees the same.
  s.gpus.assign(gpus.begin(), gpus.end());
  if (!std::is_sorted(s.gpus.begin(), s.gpus.end())) std::sort(s.gpus.begin(), s.gpus.end());
  for (unsigned g : s.gpus) gpus_.hold(g, j);
  ++running_;
  const detail::Segment seg = detail::plan_segment(s, t, cfg_.checkpoint);
  s.seg_end = now + seg.wall;
  s.seg_timeout = seg.timeout;
  s.slow_at = -1;
  // The scheduler does not know a straggler it has not detected: jobs start on it.
  if (slow_gpus_ > 0 &&
      std::any_of(s.gpus.begin(), s.gpus.end(), [&](unsigned g) { return slow_[g].slow; })) {
    stretch(j, now);
  }
  push(s.seg_end, Ev::kEnd, j, ++s.gen);
}

bool Engine::stretch(std::uint32_t j, TimeNs now) {
  JobState& s = jobs_[j];
  // The slowest GPU sets the pace: one straggler is enough. A factor of 1 slows nothing.
  if (s.slow_at >= 0 || !(cfg_.failures.slow.factor > 1)) return false;
  const TraceJob& t = trace_[j];
  s.slow_at = now;
  const auto left = static_cast<double>(s.seg_end - now) * cfg_.failures.slow.factor;
  TimeNs end = now + static_cast<DurationNs>(std::ceil(left));
  // The time limit is wall time: a slowed job may now run into it.
  if (t.time_limit > 0 && end > s.seg_start + t.time_limit) {
    end = s.seg_start + t.time_limit;
    s.seg_timeout = true;
  }
  s.seg_end = end;
  return true;
}

void Engine::finish(std::uint32_t j, TimeNs now) {
  JobState& s = jobs_[j];
  const TraceJob& t = trace_[j];
  detail::Kept p = detail::progress_at(s, t, cfg_.checkpoint,
                                       detail::job_clock(s, now, cfg_.failures.slow.factor),
                                       /*completed=*/true);
  p.slowed = now - detail::job_clock(s, now, cfg_.failures.slow.factor);
  acc_.charge(s, t, now - s.seg_start, p, 0);
  s.saved = s.seg_timeout ? s.saved + p.kept : t.duration;
  s.phase = Phase::kDone;
  s.end = now;
  s.timed_out = s.seg_timeout;
  leave(j, now);
}

void Engine::interrupt(std::uint32_t j, TimeNs now, const std::string& cause, DurationNs hang) {
  JobState& s = jobs_[j];
  if (s.phase != Phase::kRunning) return;
  const TraceJob& t = trace_[j];
  const TimeNs clock = detail::job_clock(s, now, cfg_.failures.slow.factor);
  detail::Kept p = detail::progress_at(s, t, cfg_.checkpoint, clock, false);
  p.slowed = now - clock;
  acc_.charge(s, t, now - s.seg_start, p, hang);
  const bool slow = cause == kSlowCause;
  if (slow) {
    acc_.slow_lost_work_gpu_s +=
        static_cast<double>(p.computed - p.kept) * static_cast<double>(t.gpus) * t.gpu_share / 1e9;
  }
  s.after_slow = slow;
  s.saved = std::min(t.duration, s.saved + p.kept);
  s.phase = Phase::kHung;
  ++s.gen;  // its end event is void now
  ++acc_.interruptions;
  ++step_interruptions_;
  ++acc_.by_cause[cause];
  // The job still holds its GPUs until the failure is noticed; then it is requeued.
  push(now + hang, Ev::kDetect, j, s.gen);
}

void Engine::requeue(std::uint32_t j, TimeNs now) {
  leave(j, now);
  ++jobs_[j].restarts;
  enqueue(j, now);
}

void Engine::leave(std::uint32_t j, TimeNs now) {
  JobState& s = jobs_[j];
  const TraceJob& t = trace_[j];
  detail::release(gpus_, s, j);
  session_.end(j);
  queue_.left(j);
  --running_;
  if (use_usage_) {
    sched::decay_usage(usage_, now, cfg_.policy.half_life);
    sched::charge_usage(
        usage_, detail::user_of(t),
        static_cast<double>(t.gpus) * t.gpu_share * static_cast<double>(now - s.seg_start) / 1e9);
  }
  dirty_ = true;
  only_arrivals_ = false;
}

void Engine::take_down(unsigned g, TimeNs until, bool maintenance) {
  detail::GpuState& gs = gpus_.state[g];
  gs.down_until = std::max(gs.down_until, until);
  if (maintenance) ++gs.maintenance;
  // Whatever takes a straggler out (a failure, a drain) finds and mends it; its jobs were
  // stopped by the same cause.
  if (!slow_.empty() && slow_[g].slow) {
    slow_[g].slow = false;
    --slow_gpus_;
  }
  if (!gs.down) {
    if (!gpus_.held(g)) --gpus_.idle;
    gs.down = true;
    ++gpus_.down;
    session_.set_health(gpus_.node_of[g], gpus_.pos_of[g], sched::GpuHealth::kFenced);
    // The job strict order stopped at may now be too large for the GPUs up, and skipped.
    dirty_ = true;
    only_arrivals_ = false;
    head_gpus_ = 0;
  }
}

void Engine::bring_up(unsigned g, TimeNs now) {
  detail::GpuState& gs = gpus_.state[g];
  if (!gs.down || gs.down_until > now || gs.maintenance > 0) return;
  gs.down = false;
  if (!gpus_.held(g)) ++gpus_.idle;
  --gpus_.down;
  session_.set_health(gpus_.node_of[g], gpus_.pos_of[g], sched::GpuHealth::kOk);
  dirty_ = true;
  only_arrivals_ = false;
}

void Engine::on_failure(const FailureEvent& f) {
  const Component& c = cfg_.failures.components[f.component];
  const std::vector<unsigned> hit = gpus_.hit_by(f, cfg_.cluster.nodes_per_domain);
  if (hit.empty()) return;
  if (f.scope == Scope::kJob) {
    // Software: kills what runs there, takes nothing out of service.
    std::vector<std::uint32_t> victims = gpus_.jobs_on(hit);
    if (victims.empty()) return;
    acc_.count_failure(c.category);
    for (std::uint32_t j : victims) interrupt(j, f.time, c.name, cfg_.failures.detection);
    return;
  }
  // A fault on hardware that is already out of service changes nothing.
  if (std::all_of(hit.begin(), hit.end(), [&](unsigned g) { return gpus_.state[g].down; })) {
    return;
  }
  acc_.count_failure(c.category);
  for (std::uint32_t j : gpus_.jobs_on(hit)) interrupt(j, f.time, c.name, cfg_.failures.detection);
  const TimeNs until = f.time + cfg_.failures.detection + std::max<DurationNs>(f.repair, 1);
  for (unsigned g : hit) take_down(g, until, false);
  push(until, Ev::kRepair, hit.front(), static_cast<std::uint32_t>(hit.size()));
}

void Engine::on_slow(const SlowEvent& e) {
  if (e.node >= gpus_.begin.size()) return;
  const std::vector<unsigned> node = gpus_.of_node(e.node);
  if (node.empty()) return;
  // Drawn as if every node had the average count: on a smaller node it stands for one of its.
  const unsigned g = node[e.gpu % node.size()];
  detail::SlowGpu& sg = slow_[g];
  if (gpus_.state[g].down || sg.slow) return;  // out of service, or a straggler already
  sg.slow = true;
  ++sg.gen;
  sg.repair = e.repair;
  ++slow_gpus_;
  ++acc_.stragglers;
  for (std::uint32_t j : gpus_.jobs_on({g})) {
    if (jobs_[j].phase == Phase::kRunning && stretch(j, e.time)) {
      push(jobs_[j].seg_end, Ev::kEnd, j, ++jobs_[j].gen);
    }
  }
  push(e.time + cfg_.failures.slow.detection, Ev::kSlowDetect, g, sg.gen);
}

void Engine::detect_slow(unsigned g, TimeNs now) {
  detail::SlowGpu& sg = slow_[g];
  sg.slow = false;
  --slow_gpus_;
  ++acc_.stragglers_detected;
  // Its jobs are stopped as for a drain (the scheduler knows now; nothing hangs) and requeued
  // from their last checkpoint; the GPU goes out for repair.
  for (std::uint32_t j : gpus_.jobs_on({g})) interrupt(j, now, std::string(kSlowCause), 0);
  const TimeNs until = now + std::max<DurationNs>(sg.repair, 1);
  take_down(g, until, false);
  push(until, Ev::kRepair, g, 1);
}

void Engine::pass(TimeNs now) {
  if (!dirty_ || queue_.empty()) return;
  dirty_ = false;
  // FCFS keeps strict submit order: jobs that arrive behind a blocked head cannot start, and
  // nothing starts while the head needs more GPUs than are idle.
  if (blocked_ && !cfg_.policy.backfill && cfg_.policy.order == sched::Order::kFcfs &&
      (only_arrivals_ || gpus_.idle < head_gpus_)) {
    return;
  }
  // Nothing can start when no pending job fits in the idle GPUs: skip the pass (exclusive jobs
  // only; shared ones may fit beside others). Whatever frees GPUs marks the queue dirty again.
  if (!queue_.any_shared() && gpus_.idle < queue_.smallest_gpus()) {
    // With every GPU up the first job in order blocks the rest; with some down it may be
    // skipped as too large for the GPUs up, so arrivals must still get a pass.
    if (gpus_.down == 0) blocked_ = true;
    return;
  }
  only_arrivals_ = true;
  ++acc_.passes;
  sched::PolicyConfig policy = cfg_.policy;
  policy.list_reserved = false;  // the reservation's GPUs are not read here
  if (policy.backfill && cfg_.backfill_interval > 0) {
    if (now - last_backfill_ >= cfg_.backfill_interval) {
      last_backfill_ = now;
    } else {
      // Between backfill passes the base order runs alone; a wake-up brings backfill back.
      policy.backfill = false;
      if (!backfill_due_) {
        backfill_due_ = true;
        push(last_backfill_ + cfg_.backfill_interval, Ev::kBackfill, 0);
      }
    }
  }
  sched::ScheduleResult r;
  if (cfg_.rank_every_pass) {
    r = session_.pass(queue_.jobs(), usage_, policy, now);
  } else {
    queue_.refresh(usage_, now);
    r = session_.pass_ordered(queue_.ordered(), policy, now);
  }
  // Only a job strict order stopped at blocks; one skipped (too large for the GPUs that are
  // up) lets later arrivals pass.
  blocked_ = r.blocker.has_value();
  // The starts are the last running jobs of the session, which built no placement for them.
  const std::size_t first = session_.cluster().running.size() - r.starts.size();
  for (std::size_t i = 0; i < r.starts.size(); ++i) {
    start(r.starts[i], session_.running_gpus(first + i), now);
    queue_.erase(r.starts[i].job);
  }
  head_gpus_ = r.blocker ? trace_[static_cast<std::size_t>(*r.blocker)].gpus : 0;
}

void Engine::sample(TimeNs now) {
  SeriesPoint p;
  p.time = now;
  p.down_gpus = gpus_.down;
  p.pending = queue_.size();
  p.running = running_;
  p.interruptions = step_interruptions_;
  step_interruptions_ = 0;
  for (const sched::Running& r : session_.cluster().running) {
    const JobState& s = jobs_[static_cast<std::size_t>(r.id)];
    const auto n = static_cast<unsigned>(s.gpus.size());
    p.allocated_gpus += n;
    if (s.phase == Phase::kRunning && now >= s.seg_start + s.seg_restart) p.productive_gpus += n;
  }
  series_.push_back(p);
}

Result<SimResult> Engine::run() {
  if (cfg_.cluster.nodes() == 0) return fail(Error::invalid("the cluster has no nodes"));
  jobs_.resize(trace_.size());
  gpus_ = detail::Gpus(session_.cluster());
  use_usage_ = needs_usage(cfg_.policy);
  usage_.updated_at = trace_.empty() ? 0 : trace_.front().submit;

  const bool failures = !cfg_.failures.components.empty() || cfg_.failures.maintenance_interval > 0;
  const TimeNs last_submit = trace_.empty() ? 0 : trace_.back().submit;
  const TimeNs fail_horizon =
      cfg_.horizon > 0 ? cfg_.horizon : last_submit + 3650LL * 86400 * kNsPerSec;
  // Mixed node sizes: the average count keeps the cluster's failure rate (per GPU) right.
  const unsigned avg_gpus =
      std::max(1u, static_cast<unsigned>(std::lround(static_cast<double>(cfg_.cluster.gpus()) /
                                                     std::max(1u, cfg_.cluster.nodes()))));
  const Topology topo{.nodes = cfg_.cluster.nodes(),
                      .gpus_per_node = avg_gpus,
                      .nodes_per_domain = cfg_.cluster.nodes_per_domain};
  FailureProcess process(cfg_.failures, topo, cfg_.seed, failures ? fail_horizon : 0);
  std::optional<FailureEvent> next_fail = failures ? process.next() : std::nullopt;
  std::vector<MaintenanceWindow> maint =
      failures ? maintenance_schedule(cfg_.failures, topo, cfg_.seed, fail_horizon)
               : std::vector<MaintenanceWindow>{};
  std::size_t next_maint = 0;
  // Stragglers draw from a stream of their own: with a rate of 0 nothing here changes a run.
  FailSlowProcess slow_process(cfg_.failures, topo, cfg_.seed,
                               cfg_.failures.slow.on() ? fail_horizon : 0);
  std::optional<SlowEvent> next_slow = slow_process.next();
  if (cfg_.failures.slow.on()) slow_.resize(gpus_.state.size());

  // Every job submitted and run once without waiting: a lower bound on the run's length.
  TimeNs span_guess = cfg_.horizon;
  if (span_guess <= 0) {
    for (const TraceJob& t : trace_) span_guess = std::max(span_guess, t.submit + t.duration);
    span_guess = std::max<TimeNs>(span_guess, 1);
  }
  DurationNs step =
      cfg_.series_step > 0 ? cfg_.series_step : std::max<DurationNs>(span_guess / 400, kNsPerSec);
  TimeNs next_sample = 0;
  std::size_t next_arrival = 0;
  TimeNs last_progress = 0;
  constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();
  TimeNs now = 0;

  while (true) {
    const bool work_left = next_arrival < trace_.size() || running_ > 0 ||
                           (!queue_.empty() && (gpus_.down > 0 || dirty_));
    if (!work_left) break;
    TimeNs t = kNever;
    if (next_arrival < trace_.size()) t = std::min(t, trace_[next_arrival].submit);
    if (!events_.empty()) t = std::min(t, events_.top().time);
    if (next_fail) t = std::min(t, next_fail->time);
    if (next_maint < maint.size()) t = std::min(t, maint[next_maint].start);
    if (next_slow) t = std::min(t, next_slow->time);
    if (t == kNever) break;
    if (cfg_.horizon > 0 && t >= cfg_.horizon) break;
    while (next_sample <= t) {
      sample(next_sample);
      next_sample += step;
      // A run far longer than foreseen: keep every other point rather than grow without end.
      if (cfg_.series_step <= 0 && series_.size() >= 2000) {
        detail::thin_series(series_);
        next_sample += step;
        step *= 2;
      }
    }
    now = t;
    // Everything at this instant first, then one pass.
    while (next_arrival < trace_.size() && trace_[next_arrival].submit == now) {
      enqueue(static_cast<std::uint32_t>(next_arrival++), now);
      ++acc_.events;
    }
    while (!events_.empty() && events_.top().time == now) {
      const Event e = events_.top();
      events_.pop();
      ++acc_.events;
      switch (e.kind) {
        case Ev::kEnd:
          if (jobs_[e.a].phase == Phase::kRunning && jobs_[e.a].gen == e.gen) finish(e.a, now);
          break;
        case Ev::kDetect:
          if (jobs_[e.a].phase == Phase::kHung && jobs_[e.a].gen == e.gen) requeue(e.a, now);
          break;
        case Ev::kRepair:
          for (unsigned g = e.a; g < e.a + e.gen; ++g) bring_up(g, now);
          break;
        case Ev::kBackfill:
          backfill_due_ = false;
          dirty_ = true;
          only_arrivals_ = false;
          break;
        case Ev::kSlowDetect:
          if (slow_[e.a].slow && slow_[e.a].gen == e.gen) detect_slow(e.a, now);
          break;
        case Ev::kMaintEnd:
          for (unsigned g : gpus_.of_node(e.a)) {
            --gpus_.state[g].maintenance;
            bring_up(g, now);
          }
          break;
      }
    }
    while (next_fail && next_fail->time == now) {
      ++acc_.events;
      on_failure(*next_fail);
      next_fail = process.next();
    }
    while (next_slow && next_slow->time == now) {
      ++acc_.events;
      on_slow(*next_slow);
      next_slow = slow_process.next();
    }
    while (next_maint < maint.size() && maint[next_maint].start == now) {
      const MaintenanceWindow& w = maint[next_maint++];
      ++acc_.events;
      const std::vector<unsigned> node = gpus_.of_node(w.node);
      // Planned: the scheduler drains the node; what runs there is stopped without delay.
      for (std::uint32_t j : gpus_.jobs_on(node)) interrupt(j, now, "Planned maintenance", 0);
      for (unsigned g : node) take_down(g, now + w.duration, true);
      push(now + w.duration, Ev::kMaintEnd, w.node);
    }
    pass(now);
    if (progress_ && now - last_progress > span_guess / 200) {
      last_progress = now;
      progress_(std::min(1.0, static_cast<double>(now) / static_cast<double>(span_guess)));
    }
  }
  const TimeNs end = cfg_.horizon > 0 ? cfg_.horizon : now;
  while (next_sample <= end) {
    sample(next_sample);
    next_sample += step;
  }
  if (progress_) progress_(1.0);

  SimResult out;
  out.policy = sched::policy_text(cfg_.policy);
  out.summary = detail::summarize(cfg_, trace_, jobs_, acc_, end);
  if (cfg_.keep_jobs) out.jobs = detail::job_records(trace_, jobs_);
  out.series = std::move(series_);
  return out;
}

}  // namespace

Result<SimResult> simulate(const SimConfig& config, const std::vector<TraceJob>& jobs,
                           const Progress& progress) {
  for (std::size_t i = 1; i < jobs.size(); ++i) {
    if (jobs[i].submit < jobs[i - 1].submit) {
      return fail(Error::invalid("jobs must be sorted by submit time"));
    }
  }
  if (config.cluster.types.empty()) return fail(Error::invalid("the cluster has no nodes"));
  Engine e(config, jobs, progress);
  return e.run();
}

}  // namespace cardiac::sim
