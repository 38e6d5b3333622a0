// SPDX-License-Identifier: Apache-2.0
// Checkpoint-interval formulas (Young, Daly, Meta), ETTR models and a Monte Carlo check of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cardiac::sim {

// All times are seconds. Symbols follow Daly (2006): δ write time, M mean time between failures of
// the job, R restart time, τ compute time between checkpoints. The formulas assume independent
// exponential failures; preconditions are mtbf_s > 0 and the other times >= 0 unless stated.

// Young (1974): sqrt(2·δ·M). Restart time does not enter.
[[nodiscard]] double young_interval(double write_s, double mtbf_s);

// Daly (2006) eq. 37: sqrt(2δM)·[1 + sqrt(δ/2M)/3 + (δ/2M)/9] − δ for δ < 2M, and M for δ >= 2M.
[[nodiscard]] double daly_interval(double write_s, double mtbf_s);

// Daly's first-order optimum sqrt(2·δ·(M + R)).
[[nodiscard]] double daly_first_order_interval(double write_s, double mtbf_s, double restart_s);

// Daly's full model, where failures also strike writes and restarts (a restart can be interrupted
// and is then started again): τ / (M·e^(R/M)·(e^((τ+δ)/M) − 1)). An infinite τ gives 0.
[[nodiscard]] double ettr_daly(double tau_s, double write_s, double restart_s, double mtbf_s);

// First-order waste model: (1 − (R + (τ+δ)/2)/M)·τ/(τ+δ), clamped at 0. It is badly wrong once R
// or τ approach M; use ettr_daly for anything but a quick estimate.
[[nodiscard]] double ettr_first_order(double tau_s, double write_s, double restart_s,
                                      double mtbf_s);

// Meta's small-loss closed form (Kokolis et al., 2024): (1 − (u0 + Δt/2)/M)/(1 + w/Δt), with u0 the
// restart overhead and w the write time; clamped at 0. It has no queue-time term: fold a queue wait
// per failure into restart_s.
[[nodiscard]] double ettr_meta(double interval_s, double write_s, double restart_s, double mtbf_s);

// A blocking write stops compute for its duration. An overlapped write runs beside compute, so it
// costs nothing in the formulas, but the checkpoint is durable only when the write finishes and it
// holds the state from the moment the write started.
enum class CheckpointWrite { kBlocking, kOverlapped };

// No policy checkpoints more often than this: a zero write cost would otherwise drive Young and
// Daly to a zero interval, and no job can save state faster than a training step anyway.
inline constexpr double kMinCheckpointIntervalS = 1.0;

struct CheckpointPolicy {
  enum Kind { kNone, kFixed, kYoung, kDaly };
  Kind kind = kDaly;
  double interval_s = 0;   // only for kFixed
  double write_s = 30;     // δ
  double restart_s = 600;  // R
  CheckpointWrite write = CheckpointWrite::kBlocking;
};

// Parses "none", "daly", "young", "fixed:<duration>" or a bare duration ("30m", "1h", "600" = s),
// optionally followed by comma-separated modifiers "write=<duration>", "restart=<duration>",
// "overlapped" or "blocking" (e.g. "daly,write=30s,restart=10m"). Case-insensitive. Fields not
// named keep the CheckpointPolicy defaults. Returns a kParse error naming the text on garbage, a
// zero fixed interval, or a repeated modifier.
[[nodiscard]] Result<CheckpointPolicy> parse_checkpoint_policy(std::string_view text);

// "none", "daly", "young" or "fixed:<seconds>s", plus the write and restart times: for reports.
[[nodiscard]] std::string describe(const CheckpointPolicy& policy);

// The compute interval τ a job with this MTBF uses: kDaly → daly_interval, kYoung →
// young_interval, kFixed → interval_s, kNone → +infinity. For overlapped writes the formulas see a
// zero write cost, so their optimum is "as often as possible": the interval is then write_s, one
// write in flight at a time. Never below kMinCheckpointIntervalS (except kNone).
[[nodiscard]] double interval_for(const CheckpointPolicy& policy, double job_mtbf_s);

struct MonteCarloResult {
  double ettr_mean = 0;         // total work / total wall time over all runs
  double ettr_stderr = 0;       // standard error of ettr_mean (delta method over runs)
  double failures_per_run = 0;  // including failures during writes and restarts
  std::uint64_t runs = 0;
};

// Simulates `runs` independent jobs that each must do work_s seconds of compute, checkpointing
// every tau_s of compute, with exponential failures of mean mtbf_s striking at any time (compute,
// writes, restarts). A failure costs restart_s (which can itself be interrupted) and resumes from
// the last durable checkpoint. Every job ends with a checkpoint of its final state, as in Daly's
// model; with overlapped writes the job waits for that last write. With overlapped writes a
// checkpoint that falls due while a write is still in flight is skipped. Deterministic for a seed.
// Returns NaN fields and runs = 0 when tau_s, mtbf_s or work_s is not positive or runs is 0.
[[nodiscard]] MonteCarloResult monte_carlo_ettr(double tau_s, double write_s, double restart_s,
                                                double mtbf_s, double work_s, std::uint64_t runs,
                                                std::uint64_t seed,
                                                CheckpointWrite write = CheckpointWrite::kBlocking);

// What an operator needs to pick a checkpoint interval for one job, all from the full Daly model.
struct CheckpointAdvice {
  double gpus = 0;
  double job_mtbf_s = 0;          // M = mtbf_gpu_hours·3600 / gpus
  double failures_per_day = 0;    // 86400 / M
  double write_s = 0;             // δ
  double restart_s = 0;           // R
  double young_interval_s = 0;    // sqrt(2δM)
  double daly_interval_s = 0;     // eq. 37
  double ettr_young = 0;          // ettr_daly at the Young interval
  double ettr_daly = 0;           // ettr_daly at the Daly interval
  double ettr_first_order = 0;    // first-order estimate at the Daly interval, for comparison
  double work_s = 0;              // job length the no-checkpoint figure is for
  double ettr_no_checkpoint = 0;  // work_s in one piece: work / (M·e^(R/M)·(e^(work/M) − 1))
  double wall_s_daly = 0;         // expected wall time for work_s at the Daly interval
};

// Precondition: gpus > 0 and mtbf_gpu_hours > 0 (otherwise the fields are NaN or infinite).
[[nodiscard]] CheckpointAdvice advise(double gpus, double mtbf_gpu_hours, double write_s,
                                      double restart_s, double work_s = 86400.0);

}  // namespace cardiac::sim
