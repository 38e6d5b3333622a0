// SPDX-License-Identifier: Apache-2.0
// Checkpoint-interval formulas, ETTR models, policy parsing and the Monte Carlo ETTR check.
#include "sim/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Past this many expected failures over all runs the Monte Carlo would take minutes: the job
// makes practically no progress, and the closed form already says so.
constexpr double kMaxExpectedFailures = 1e8;

}  // namespace

double young_interval(double write_s, double mtbf_s) {
  return std::sqrt(2.0 * write_s * mtbf_s);
}

double daly_interval(double write_s, double mtbf_s) {
  if (write_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = write_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * write_s * mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - write_s;
}

double daly_first_order_interval(double write_s, double mtbf_s, double restart_s) {
  return std::sqrt(2.0 * write_s * (mtbf_s + restart_s));
}

double ettr_daly(double tau_s, double write_s, double restart_s, double mtbf_s) {
  if (std::isinf(tau_s)) return 0.0;
  // The limit τ → 0 with a free write is e^(−R/M); with a costly write no work is done.
  if (tau_s <= 0) return write_s <= 0 ? std::exp(-restart_s / mtbf_s) : 0.0;
  // expm1 keeps the small-(τ+δ)/M regime (large M) accurate.
  const double denom =
      mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((tau_s + write_s) / mtbf_s);
  if (std::isinf(denom)) return 0.0;
  return tau_s / denom;
}

double ettr_first_order(double tau_s, double write_s, double restart_s, double mtbf_s) {
  if (tau_s <= 0 || std::isinf(tau_s)) return 0.0;
  const double value =
      (1.0 - (restart_s + (tau_s + write_s) / 2.0) / mtbf_s) * tau_s / (tau_s + write_s);
  return std::max(0.0, value);
}

double ettr_meta(double interval_s, double write_s, double restart_s, double mtbf_s) {
  if (interval_s <= 0 || std::isinf(interval_s)) return 0.0;
  const double value =
      (1.0 - (restart_s + interval_s / 2.0) / mtbf_s) / (1.0 + write_s / interval_s);
  return std::max(0.0, value);
}

// ---------------------------------------------------------------------------------------------
// Policy parsing

namespace {

Result<double> parse_seconds(std::string_view field, std::string_view what, std::string_view text) {
  auto ns = parse_duration_ns(field);
  if (!ns || *ns < 0) {
    return fail(Error::parse(
        fmt::format("bad {} \"{}\" in \"{}\": expected a duration such as 30s, 10m, 1h or 600",
                    what, field, text),
        "checkpoint policy"));
  }
  return static_cast<double>(*ns) / static_cast<double>(kNsPerSec);
}

Status parse_kind(std::string_view field, std::string_view text, CheckpointPolicy& policy) {
  if (field == "none") {
    policy.kind = CheckpointPolicy::kNone;
    return {};
  }
  if (field == "daly") {
    policy.kind = CheckpointPolicy::kDaly;
    return {};
  }
  if (field == "young") {
    policy.kind = CheckpointPolicy::kYoung;
    return {};
  }
  std::string_view interval = field;
  if (starts_with(field, "fixed:")) interval = trim(field.substr(6));
  auto ns = parse_duration_ns(interval);
  if (!ns) {
    return fail(
        Error::parse(fmt::format("unknown checkpoint policy \"{}\": expected none, daly, young, "
                                 "fixed:<duration> or a duration such as 30m",
                                 text),
                     "checkpoint policy"));
  }
  if (*ns <= 0) {
    return fail(Error::parse(fmt::format("checkpoint interval in \"{}\" must be positive", text),
                             "checkpoint policy"));
  }
  policy.kind = CheckpointPolicy::kFixed;
  policy.interval_s = static_cast<double>(*ns) / static_cast<double>(kNsPerSec);
  return {};
}

}  // namespace

Result<CheckpointPolicy> parse_checkpoint_policy(std::string_view text) {
  const std::string lower = to_lower(trim(text));
  const std::vector<std::string_view> fields = split(lower, ',');
  CheckpointPolicy policy;
  CARDIAC_TRY(parse_kind(trim(fields[0]), text, policy));

  bool seen_write = false, seen_restart = false, seen_mode = false;
  for (std::size_t i = 1; i < fields.size(); ++i) {
    const std::string_view field = trim(fields[i]);
    bool repeated = false;
    if (starts_with(field, "write=")) {
      repeated = std::exchange(seen_write, true);
      auto s = parse_seconds(field.substr(6), "write time", text);
      if (!s) return fail(s.error());
      policy.write_s = *s;
    } else if (starts_with(field, "restart=")) {
      repeated = std::exchange(seen_restart, true);
      auto s = parse_seconds(field.substr(8), "restart time", text);
      if (!s) return fail(s.error());
      policy.restart_s = *s;
    } else if (field == "overlapped" || field == "blocking") {
      repeated = std::exchange(seen_mode, true);
      policy.write =
          field == "overlapped" ? CheckpointWrite::kOverlapped : CheckpointWrite::kBlocking;
    } else {
      return fail(Error::parse(fmt::format("unknown modifier \"{}\" in \"{}\": expected "
                                           "write=<duration>, restart=<duration>, overlapped or "
                                           "blocking",
                                           field, text),
                               "checkpoint policy"));
    }
    if (repeated) {
      return fail(Error::parse(fmt::format("modifier \"{}\" repeated in \"{}\"", field, text),
                               "checkpoint policy"));
    }
  }
  return policy;
}

std::string describe(const CheckpointPolicy& policy) {
  std::string kind;
  switch (policy.kind) {
    case CheckpointPolicy::kNone:
      return "none";
    case CheckpointPolicy::kFixed:
      kind = fmt::format("fixed:{:g}s", policy.interval_s);
      break;
    case CheckpointPolicy::kYoung:
      kind = "young";
      break;
    case CheckpointPolicy::kDaly:
      kind = "daly";
      break;
  }
  return fmt::format("{},write={:g}s,restart={:g}s,{}", kind, policy.write_s, policy.restart_s,
                     policy.write == CheckpointWrite::kOverlapped ? "overlapped" : "blocking");
}

double interval_for(const CheckpointPolicy& policy, double job_mtbf_s) {
  const bool overlapped = policy.write == CheckpointWrite::kOverlapped;
  // An overlapped write stalls nothing, so the formulas see δ = 0 and want τ → 0; the real limit
  // is one write in flight, i.e. start the next write when the last one ends.
  const double cost = overlapped ? 0.0 : policy.write_s;
  double tau = 0;
  switch (policy.kind) {
    case CheckpointPolicy::kNone:
      return kInf;
    case CheckpointPolicy::kFixed:
      tau = policy.interval_s;
      break;
    case CheckpointPolicy::kYoung:
      tau = young_interval(cost, job_mtbf_s);
      break;
    case CheckpointPolicy::kDaly:
      tau = daly_interval(cost, job_mtbf_s);
      break;
  }
  if (overlapped && policy.kind != CheckpointPolicy::kFixed) tau = std::max(tau, policy.write_s);
  return std::max(tau, kMinCheckpointIntervalS);
}

// ---------------------------------------------------------------------------------------------
// Monte Carlo

namespace {

// Exponential variates from the raw 64-bit engine output, so a seed gives the same stream on
// every standard library (std::*_distribution does not promise that).
class ExponentialSource {
 public:
  explicit ExponentialSource(std::uint64_t seed) : gen_(seed) {}
  // u in [0, 1) from the top 53 bits; 1 − u is then in (0, 1] and its log is finite.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double next(double mean) { return -mean * std::log1p(-uniform()); }

 private:
  std::mt19937_64 gen_;
};

struct JobParams {
  double tau;
  double write;
  double restart;
  double mtbf;
  double work;
};

// One job's progress through wall time. Failure times are kept as absolute wall times; an
// exponential clock has no memory, so this is the same process as sampling per phase.
class JobRun {
 public:
  JobRun(const JobParams& p, ExponentialSource& rng)
      : p_(p), rng_(rng), next_fail_(rng.next(p.mtbf)), next_ckpt_(checkpoint_after(0)) {}

  void run_blocking() {
    while (true) {
      const double reach = t_ + (next_ckpt_ - done_);
      if (next_fail_ < reach) {
        fail();
        continue;
      }
      t_ = reach;
      done_ = next_ckpt_;
      if (next_fail_ < t_ + p_.write) {
        fail();
        continue;
      }
      t_ += p_.write;
      durable_ = done_;
      if (durable_ >= p_.work) return;
      next_ckpt_ = checkpoint_after(durable_);
    }
  }

  void run_overlapped() {
    while (true) {
      const bool computing = done_ < p_.work;
      const double reach = computing ? t_ + (next_ckpt_ - done_) : kInf;
      const double ev = writing_ ? std::min(reach, write_end_) : reach;
      if (next_fail_ < ev) {
        fail();
        continue;
      }
      if (computing) done_ = ev == reach ? next_ckpt_ : done_ + (ev - t_);
      t_ = ev;
      // A write that ends exactly at a boundary finishes first, so the boundary can start the next.
      if (writing_ && write_end_ <= t_) {
        writing_ = false;
        durable_ = write_state_;
        if (durable_ >= p_.work) return;
        if (!computing) start_write();  // the final state still has to be saved
      }
      if (computing && ev == reach) {
        if (!writing_) start_write();  // else: skipped, one write in flight at a time
        if (done_ < p_.work) next_ckpt_ = checkpoint_after(done_);
      }
    }
  }

  [[nodiscard]] double wall() const { return t_; }
  [[nodiscard]] std::uint64_t failures() const { return failures_; }

 private:
  // The next checkpoint in compute progress; snapped to the end of the job so a work that is a
  // multiple of τ does not leave a sliver of a segment to rounding.
  [[nodiscard]] double checkpoint_after(double progress) const {
    const double next = progress + p_.tau;
    return next >= p_.work - 1e-9 * p_.tau ? p_.work : next;
  }

  void start_write() {
    writing_ = true;
    write_state_ = done_;
    write_end_ = t_ + p_.write;
  }

  void fail() {
    t_ = next_fail_;
    ++failures_;
    next_fail_ = t_ + rng_.next(p_.mtbf);
    // The restart is interrupted by any failure before it completes, and then begins again.
    while (next_fail_ < t_ + p_.restart) {
      t_ = next_fail_;
      ++failures_;
      next_fail_ = t_ + rng_.next(p_.mtbf);
    }
    t_ += p_.restart;
    done_ = durable_;
    writing_ = false;
    next_ckpt_ = checkpoint_after(durable_);
  }

  const JobParams& p_;
  ExponentialSource& rng_;
  double t_ = 0;
  double next_fail_;
  double done_ = 0;     // compute progress in the current attempt
  double durable_ = 0;  // progress held by the last completed checkpoint
  double next_ckpt_;
  bool writing_ = false;
  double write_state_ = 0;
  double write_end_ = 0;
  std::uint64_t failures_ = 0;
};

}  // namespace

MonteCarloResult monte_carlo_ettr(double tau_s, double write_s, double restart_s, double mtbf_s,
                                  double work_s, std::uint64_t runs, std::uint64_t seed,
                                  CheckpointWrite write) {
  const MonteCarloResult invalid{kNaN, kNaN, kNaN, 0};
  if (!(tau_s > 0) || !(mtbf_s > 0) || !(work_s > 0) || runs == 0) return invalid;
  if (!(write_s >= 0) || !(restart_s >= 0)) return invalid;
  const double stall = write == CheckpointWrite::kBlocking ? write_s : 0.0;
  const double model = ettr_daly(std::min(tau_s, work_s), stall, restart_s, mtbf_s);
  const double expected_failures = static_cast<double>(runs) * work_s / (model * mtbf_s);
  if (!(model > 0) || !(expected_failures < kMaxExpectedFailures)) return invalid;

  const JobParams params{tau_s, std::max(write_s, 0.0), restart_s, mtbf_s, work_s};
  ExponentialSource rng(seed);
  // Welford's running mean and variance of the wall time per run.
  double mean = 0, m2 = 0;
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i < runs; ++i) {
    JobRun job(params, rng);
    if (write == CheckpointWrite::kBlocking) {
      job.run_blocking();
    } else {
      job.run_overlapped();
    }
    failures += job.failures();
    const double delta = job.wall() - mean;
    mean += delta / static_cast<double>(i + 1);
    m2 += delta * (job.wall() - mean);
  }
  // ETTR as work over wall summed across runs (one long job), which is what Daly's T_s / E[T_w]
  // describes; a mean of per-run ratios would be biased upwards by Jensen's inequality.
  MonteCarloResult result;
  result.runs = runs;
  result.ettr_mean = work_s / mean;
  const double n = static_cast<double>(runs);
  result.ettr_stderr = runs < 2 ? kInf : result.ettr_mean * std::sqrt(m2 / (n - 1) / n) / mean;
  result.failures_per_run = static_cast<double>(failures) / n;
  return result;
}

CheckpointAdvice advise(double gpus, double mtbf_gpu_hours, double write_s, double restart_s,
                        double work_s) {
  CheckpointAdvice a;
  a.gpus = gpus;
  a.job_mtbf_s = mtbf_gpu_hours * 3600.0 / gpus;
  a.failures_per_day = 86400.0 / a.job_mtbf_s;
  a.write_s = write_s;
  a.restart_s = restart_s;
  a.young_interval_s = young_interval(write_s, a.job_mtbf_s);
  a.daly_interval_s = daly_interval(write_s, a.job_mtbf_s);
  a.ettr_young = ettr_daly(a.young_interval_s, write_s, restart_s, a.job_mtbf_s);
  a.ettr_daly = ettr_daly(a.daly_interval_s, write_s, restart_s, a.job_mtbf_s);
  a.ettr_first_order = ettr_first_order(a.daly_interval_s, write_s, restart_s, a.job_mtbf_s);
  a.work_s = work_s;
  a.ettr_no_checkpoint = ettr_daly(work_s, 0.0, restart_s, a.job_mtbf_s);
  a.wall_s_daly = a.ettr_daly > 0 ? work_s / a.ettr_daly : kInf;
  return a;
}

}  // namespace cardiac::sim
