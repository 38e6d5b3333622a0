// SPDX-License-Identifier: Apache-2.0
// The discrete-event cluster simulator: jobs from a trace, the scheduling core's passes
// (src/sched, through a Session), failures, repairs, maintenance and checkpoint/restart.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "sched/sched.h"
#include "sim/checkpoint.h"
#include "sim/failures.h"
#include "sim/trace.h"

namespace cardiac::sim {

struct NodeType {
  std::string model{};  // "" any; matched against a job's gpu_type ("V100M16|V100M32")
  unsigned gpus_per_node = 8;
  unsigned count = 0;
  std::uint64_t gpu_memory = std::uint64_t{80} << 30;
};

struct ClusterSpec {
  std::vector<NodeType> types{};
  unsigned nodes_per_domain = 16;  // nodes under one leaf switch / rack / power domain
  // Extra nodes beyond the types' counts, of the first type: they join the pool, so the
  // workload can restart on them while failed nodes are repaired.
  unsigned spares = 0;

  [[nodiscard]] unsigned nodes() const;
  [[nodiscard]] unsigned gpus() const;
};

// The most GPUs one simulated node may hold.
inline constexpr unsigned kMaxGpusPerNode = 64;

// "2048x8", "2048x8:H100", "1000x8:A100,200x4:T4"; "+N" at the end adds N spare nodes
// ("2048x8+256"). Errors name the text and the limit broken.
Result<ClusterSpec> parse_cluster(std::string_view text);

struct SimConfig {
  ClusterSpec cluster{};
  sched::PolicyConfig policy{};
  FailureModel failures{};  // name "none" or empty components: no failures
  CheckpointPolicy checkpoint{.kind = CheckpointPolicy::kNone};
  std::uint64_t seed = 1;
  TimeNs horizon = 0;          // 0: until every job has ended (or can never start)
  DurationNs series_step = 0;  // time-series resolution; 0: about 400 points over the run
  bool keep_jobs = true;       // per-job records in the result
  // Like Slurm's bf_interval: backfill runs at most this often; passes in between keep the
  // base policy's strict order. 0: backfill on every pass.
  DurationNs backfill_interval = 30 * kNsPerSec;
  // Like Slurm's PriorityCalcPeriod: the priority and fairshare orders recompute their factors
  // (fair share, age, QOS range) at most this often, at the first pass after it has passed,
  // and keep the queue's order in between; a job arriving meanwhile is placed by the last
  // factors, its age counted at arrival. 0: before every pass, as schedule() ranks alone.
  DurationNs priority_calc_period = 5 * 60 * kNsPerSec;
  // Hand the whole pending list to the scheduler to rank on every pass instead of reading the
  // queue kept in order: the same results as priority_calc_period 0 at the cost of a sort of
  // the queue per pass. The reference the tests compare the ordered queue against.
  bool rank_every_pass = false;
};

struct JobRecord {
  std::int64_t id = 0;
  std::string name{};  // the trace's id for the job, as written
  std::string user{};
  TimeNs submit = 0;
  TimeNs start = -1;  // first start; -1 never started
  TimeNs end = -1;    // -1 not ended within the horizon
  unsigned gpus = 0;
  unsigned restarts = 0;
  DurationNs work = 0;        // the trace's duration: productive run time needed
  DurationNs productive = 0;  // work done and kept (equals work when it completed)
  bool timed_out = false;
};

struct SeriesPoint {
  TimeNs time = 0;
  unsigned allocated_gpus = 0;
  unsigned productive_gpus = 0;  // allocated to jobs computing, not restarting or hung
  unsigned down_gpus = 0;
  std::size_t pending = 0;
  std::size_t running = 0;
  std::uint64_t interruptions = 0;  // in the step that ends here
};

struct Quantiles {
  double mean = 0, median = 0, p99 = 0;
};

struct UserFairness {
  double demand_gpu_h = 0;    // GPU-hours asked for (work × GPUs)
  double received_gpu_h = 0;  // GPU-hours allocated
  double entitled_gpu_h = 0;  // max-min fair split of what was delivered, by demand
};

// Completed jobs of one size class (GPUs up to a power of two): their mean ETTR.
struct SizeClass {
  std::size_t jobs = 0;
  double ettr_mean = 0;
  std::uint64_t interruptions = 0;
};

struct Summary {
  std::size_t jobs = 0, completed = 0, timed_out = 0, unfinished = 0, never_started = 0;
  std::size_t impossible = 0;  // no node set of the cluster could ever hold them
  double span_s = 0;           // first submit to last end (or the horizon)
  double cluster_gpus = 0;
  double utilization_allocated = 0;         // allocated GPU-time / (GPUs × span)
  double utilization_productive = 0;        // productive GPU-time / (GPUs × span)
  Quantiles wait_s{}, jct_s{}, slowdown{};  // slowdown bounded at 10 s of run time
  std::uint64_t interruptions = 0;          // job runs ended by a failure or maintenance
  std::uint64_t failures = 0;               // failure events that took effect
  std::map<std::string, std::uint64_t> interruptions_by_cause{};  // component name
  std::map<std::string, std::uint64_t> failures_by_category{};
  double allocated_gpu_h = 0, productive_gpu_h = 0;
  double lost_gpu_h = 0;  // allocated but not kept: lost work, restarts, hung time, writes
  double lost_work_gpu_h = 0, restart_gpu_h = 0, hung_gpu_h = 0, checkpoint_gpu_h = 0;
  // Fail-slow GPUs (FailureModel::slow; the reports show these when `fail_slow`): stragglers
  // that took effect and those found and taken out, and the GPU-hours they cost, all part of
  // lost_gpu_h: the slower pace, the work lost when their jobs were stopped at detection and
  // those jobs' restarts. failure_lost_gpu_h is the rest of lost_gpu_h but checkpoint writes:
  // what fail-stop failures and maintenance cost.
  bool fail_slow = false;
  std::uint64_t stragglers = 0, stragglers_detected = 0;
  double slow_gpu_h = 0, slow_pace_gpu_h = 0, slow_lost_work_gpu_h = 0, slow_restart_gpu_h = 0;
  double failure_lost_gpu_h = 0;
  double goodput = 0;    // productive / allocated
  double ettr = 0;       // Σ productive time / Σ (end − submit), completed jobs
  double ettr_mean = 0;  // mean of per-job ETTR over completed jobs
  std::map<unsigned, SizeClass> by_size{};  // key: the class's largest GPU count (1, 2, 4, …)
  double jain_fairness = 1;                 // Jain's index of received / entitled over users
  std::map<std::string, UserFairness> users{};
  std::uint64_t events = 0;  // events processed
  std::uint64_t passes = 0;  // scheduling passes run
};

struct SimResult {
  std::string policy{};
  Summary summary{};
  std::vector<JobRecord> jobs{};  // in trace order (when keep_jobs)
  std::vector<SeriesPoint> series{};
};

// Fraction of simulated time done, in [0, 1]; called now and then, from the simulating thread.
using Progress = std::function<void(double)>;

// Deterministic for equal inputs. Errors: a configuration the engine cannot run (no nodes, a
// job needing a GPU type the cluster lacks is not an error: it never starts and is reported).
Result<SimResult> simulate(const SimConfig& config, const std::vector<TraceJob>& jobs,
                           const Progress& progress = {});

}  // namespace cardiac::sim
