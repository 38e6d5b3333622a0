// SPDX-License-Identifier: Apache-2.0
// The engine's parts that are plain arithmetic or bookkeeping, apart from the event loop:
// the GPUs and who holds them, a run segment's checkpoint timeline, the accounts and the
// summary. Tested on their own.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/sched.h"
#include "sim/engine.h"

namespace cardiac::sim::detail {

inline DurationNs seconds_ns(double s) {
  return std::isfinite(s) ? static_cast<DurationNs>(std::llround(s * 1e9)) : kForever;
}

enum class Phase : std::uint8_t { kFuture, kPending, kRunning, kHung, kDone, kImpossible };

struct JobState {
  Phase phase = Phase::kFuture;
  TimeNs first_start = -1;
  TimeNs end = -1;
  TimeNs seg_start = 0;
  TimeNs seg_end = 0;
  DurationNs seg_restart = 0;  // restart overhead at the head of this segment
  bool seg_timeout = false;    // this segment ends at the time limit, not at completion
  DurationNs saved = 0;        // work kept by checkpoints (or done) so far
  double tau_s = 0;            // compute between checkpoints (infinity: none)
  unsigned restarts = 0;
  std::uint32_t gen = 0;  // end events of an earlier segment carry an older number
  bool timed_out = false;
  bool after_slow = false;  // its last run was stopped for a straggler: the restart is its cost
  std::vector<unsigned> gpus{};  // flat GPU indices while running or hung
  double attained_gpu_s = 0;
  DurationNs productive = 0;
  // A straggler in the allocation since this instant of the segment (-1: none): from then on
  // the job's own clock runs the fail-slow factor times slower than the wall clock.
  TimeNs slow_at = -1;
};

// Where the job's own clock stands at `now`: wall time, less what a straggler's pace took.
inline TimeNs job_clock(const JobState& s, TimeNs now, double factor) {
  if (s.slow_at < 0 || now <= s.slow_at) return now;
  return s.slow_at + static_cast<DurationNs>(static_cast<double>(now - s.slow_at) / factor);
}

struct GpuState {
  TimeNs down_until = 0;
  bool down = false;
  unsigned maintenance = 0;  // drains in progress
};

// A GPU's straggler state, kept apart from GpuState (and only with stragglers on) so that the
// per-GPU words every start and end touch stay as small as they were.
struct SlowGpu {
  bool slow = false;      // a straggler not yet detected
  std::uint32_t gen = 0;  // detections of an earlier straggler carry an older number
  DurationNs repair = 0;  // how long it goes out once detected
};

// GPUs by flat index (node order, then position), their state and the jobs on them.
struct Gpus {
  Gpus() = default;
  explicit Gpus(const sched::Cluster& cluster);

  [[nodiscard]] unsigned flat(unsigned node, unsigned pos) const { return begin[node] + pos; }
  [[nodiscard]] std::vector<unsigned> of_node(unsigned node) const;
  // What a failure takes: one GPU, a node, or every node of its domain (contiguous).
  [[nodiscard]] std::vector<unsigned> hit_by(const FailureEvent& f,
                                             unsigned nodes_per_domain) const;
  // Jobs holding any of these GPUs, each once, in increasing order.
  [[nodiscard]] std::vector<std::uint32_t> jobs_on(const std::vector<unsigned>& gpus) const;

  // Whether a job holds the GPU.
  [[nodiscard]] bool held(unsigned g) const { return owner[g] != kNoJob; }
  // A job takes or leaves the GPU; idle counts stay right.
  void hold(unsigned g, std::uint32_t job);
  void drop(unsigned g, std::uint32_t job);

  static constexpr std::uint32_t kNoJob = ~std::uint32_t{0};
  std::vector<unsigned> begin{};  // per node
  std::vector<unsigned> node_of{}, pos_of{};
  std::vector<GpuState> state{};
  // The first job on each GPU inline (most GPUs hold one job or none), the others of a GPU
  // that shared jobs use in `more`: a start or end touches one word per GPU, not a vector.
  std::vector<std::uint32_t> owner{};
  std::map<unsigned, std::vector<std::uint32_t>> more{};
  unsigned down = 0;
  unsigned idle = 0;  // neither down nor held by a job
};

void release(Gpus& gpus, JobState& s, std::uint32_t job);

// The user a job's usage is charged to: traces without users share one.
inline std::string user_of(const TraceJob& t) {
  return t.user.empty() ? "default" : t.user;
}

// The simulated cluster as the scheduling core sees it: every GPU healthy, one NVLink domain
// per node.
std::vector<sched::Node> build_nodes(const SimConfig& config);

// The job as the scheduler sees it at this (re)submission. Without a time limit in the trace
// the scheduler plans with `planned`, the run's wall time (an exact estimate), so backfill can
// plan; the engine enforces only limits the trace gives. The job's id is its trace index.
sched::Job to_sched_job(std::uint32_t index, const TraceJob& t, const JobState& s,
                        const SimConfig& config, DurationNs planned);

struct Segment {
  DurationNs wall = 0;
  bool timeout = false;
};
// Wall time of a run from its start: the restart overhead, the remaining work and a blocking
// write after every τ of compute but the last; cut at the time limit.
Segment plan_segment(const JobState& s, const TraceJob& t, const CheckpointPolicy& ckpt);

struct Kept {
  DurationNs kept = 0;      // work durable at `now` (all of it when completed)
  DurationNs computed = 0;  // compute done in the segment, kept or not
  DurationNs writes = 0;    // blocking write time spent
  DurationNs restart = 0;   // restart overhead spent
  DurationNs slowed = 0;    // wall time that a straggler's pace added
};
Kept progress_at(const JobState& s, const TraceJob& t, const CheckpointPolicy& ckpt, TimeNs now,
                 bool completed);

struct Accounts {
  // One segment ends: `ran` from its start to now, then `hang` more holding the GPUs.
  void charge(JobState& s, const TraceJob& t, DurationNs ran, const Kept& k, DurationNs hang);
  void count_failure(const std::string& category) {
    ++failures;
    ++by_category[category];
  }

  double allocated_gpu_s = 0, productive_gpu_s = 0, lost_work_gpu_s = 0, restart_gpu_s = 0,
         hung_gpu_s = 0, checkpoint_gpu_s = 0;
  // What stragglers cost: their pace, the work lost when their jobs were stopped at detection
  // (also in lost_work_gpu_s) and those jobs' next restart (also in restart_gpu_s).
  double slow_pace_gpu_s = 0, slow_lost_work_gpu_s = 0, slow_restart_gpu_s = 0;
  std::uint64_t stragglers = 0, stragglers_detected = 0;
  std::uint64_t interruptions = 0, failures = 0, events = 0, passes = 0, impossible = 0;
  std::map<std::string, std::uint64_t> by_cause{}, by_category{};
  std::map<std::string, double> user_gpu_s{};
};

Summary summarize(const SimConfig& config, const std::vector<TraceJob>& trace,
                  const std::vector<JobState>& jobs, const Accounts& acc, TimeNs end);
std::vector<JobRecord> job_records(const std::vector<TraceJob>& trace,
                                   const std::vector<JobState>& jobs);

// Halves a time series: keeps the even points and adds each dropped point's interruptions to
// the kept point after it, so counts per step stay totals.
void thin_series(std::vector<SeriesPoint>& series);

// Max-min fair split of `total` among demands (water filling), index-aligned.
std::vector<double> max_min_fair(const std::vector<double>& demands, double total);
Quantiles quantiles(std::vector<double> values);

}  // namespace cardiac::sim::detail
