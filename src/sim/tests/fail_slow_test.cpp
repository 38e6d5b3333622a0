// SPDX-License-Identifier: Apache-2.0
// Fail-slow GPUs in the simulator: the straggler process, a straggler slowing its job by the
// factor until detection (worked by hand from the process's own draws), detection time against
// the GPU time lost, and a rate of 0 changing nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/failures.h"
#include "sim/tests/support.h"

namespace cardiac::sim {
namespace {

constexpr TimeNs kSlowSec = kNsPerSec;
constexpr TimeNs kSlowHour = 3600 * kSlowSec;
constexpr TimeNs kSlowDay = 24 * kSlowHour;

TraceJob slow_job(std::int64_t id, TimeNs submit, unsigned gpus, DurationNs duration) {
  TraceJob t;
  t.id = id;
  t.submit = submit;
  t.gpus = gpus;
  t.duration = duration;
  t.user = "u" + std::to_string(id % 3);
  return t;
}

// Long multi-GPU jobs arriving about every `gap`: a cluster busy for weeks.
std::vector<TraceJob> workload(std::size_t n, DurationNs gap, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TraceJob> out;
  TimeNs at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned gpus = 8u << (rng() % 3);              // 8, 16 or 32
    const DurationNs run = (4 + rng() % 21) * kSlowHour;  // 4 to 24 h
    out.push_back(slow_job(static_cast<std::int64_t>(i), at, gpus, run));
    at += static_cast<DurationNs>(rng() % 2001) * gap / 1000;  // 0 to 2 gaps
  }
  return out;
}

FailureModel stragglers_only(double per_gpu_day, double factor, DurationNs detection,
                             DurationNs repair) {
  FailureModel m;
  m.name = "stragglers";
  m.repair_sigma = 0;  // repairs exactly the mean: the hand-worked times stay exact
  m.slow = FailSlow{
      .per_gpu_day = per_gpu_day, .factor = factor, .detection = detection, .repair = repair};
  return m;
}

TEST(FailSlowProcess, OffYieldsNothingOnYieldsTheRateInOrder) {
  const Topology topo{.nodes = 100, .gpus_per_node = 8, .nodes_per_domain = 16};
  FailureModel off;
  EXPECT_FALSE(FailSlowProcess(off, topo, 1, 365 * kSlowDay).next());

  FailureModel on;
  on.slow.per_gpu_day = 1e-3;  // 0.8 a day on 800 GPUs: about 292 in a year
  FailSlowProcess p(on, topo, 7, 365 * kSlowDay);
  FailSlowProcess same(on, topo, 7, 365 * kSlowDay);
  std::size_t n = 0;
  TimeNs last = 0;
  while (auto e = p.next()) {
    auto again = same.next();
    ASSERT_TRUE(again);
    EXPECT_EQ(e->time, again->time);
    EXPECT_EQ(e->node, again->node);
    EXPECT_GE(e->time, last);
    EXPECT_LT(e->node, 100u);
    EXPECT_LT(e->gpu, 8u);
    EXPECT_GT(e->repair, 0);
    last = e->time;
    ++n;
  }
  EXPECT_FALSE(same.next());
  // Poisson with mean 292: 4 standard deviations either side.
  EXPECT_NEAR(static_cast<double>(n), 292.0, 4 * std::sqrt(292.0));
}

TEST(FailSlowPreset, ModifiersSetTheStragglersAndBadValuesAreRefused) {
  auto m = failure_preset("llama3:slow=typical,slow_factor=2,slow_detect=10m,slow_repair=2h");
  ASSERT_TRUE(m) << m.error().what();
  EXPECT_DOUBLE_EQ(m->slow.per_gpu_day, kTypicalFailSlowPerGpuDay);
  EXPECT_DOUBLE_EQ(m->slow.factor, 2);
  EXPECT_EQ(m->slow.detection, 10 * 60 * kSlowSec);
  EXPECT_EQ(m->slow.repair, 2 * kSlowHour);
  // The presets themselves have no stragglers.
  EXPECT_FALSE(failure_preset("llama3")->slow.on());

  auto low = failure_preset("llama3:slow=1e-4,slow_factor=0.5");
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().what().find("fail-slow factor"), std::string::npos) << low.error().what();
  EXPECT_FALSE(failure_preset("none:slow=-1"));
  EXPECT_FALSE(failure_preset("none:slow_detect=soon"));
}

// One job on every GPU of 2 × 8, so that every straggler lands in it. The test finds a seed
// whose first straggler comes early in the run and whose second comes long after, and works
// the run out by hand from that draw.
struct OneStraggler {
  std::uint64_t seed = 0;
  TimeNs at = 0;
};

constexpr DurationNs kWork = 10 * kSlowHour;
constexpr double kRate = 0.075;  // 16 GPUs: one straggler in 20 h on average

OneStraggler find_seed(const FailureModel& m, DurationNs quiet_after) {
  const Topology topo{.nodes = 2, .gpus_per_node = 8, .nodes_per_domain = 16};
  for (std::uint64_t seed = 1; seed < 10'000; ++seed) {
    FailSlowProcess p(m, topo, seed, 3650 * kSlowDay);
    auto first = p.next();
    auto second = p.next();
    if (first && first->time > kSlowHour && first->time < kWork / 2 &&
        (!second || second->time > first->time + quiet_after)) {
      return {seed, first->time};
    }
  }
  return {};
}

SimConfig one_job_config(const FailureModel& m, std::uint64_t seed) {
  SimConfig c = test_config("2x8", "fcfs");
  c.failures = m;
  c.seed = seed;
  c.checkpoint.restart_s = 600;
  return c;
}

TEST(FailSlowEngine, AStragglerSlowsItsJobByTheFactorUntilDetected) {
  const DurationNs detection = kSlowHour;
  const DurationNs repair = 5 * kSlowHour;
  const FailureModel m = stragglers_only(kRate, 2.0, detection, repair);
  const OneStraggler s = find_seed(m, detection + repair + kWork + 3 * kSlowHour);
  ASSERT_GT(s.seed, 0u) << "no seed with one early straggler";

  auto r = simulate(one_job_config(m, s.seed), {slow_job(0, 0, 16, kWork)});
  ASSERT_TRUE(r) << r.error().what();
  const Summary& sum = r->summary;
  // Slowed at `at`, stopped at at + 1 h having done at + 30 min of work (none kept: no
  // checkpoints); the GPU is out for 5 h, and the 16-GPU job waits for it, then restarts
  // (10 min) and runs its 10 h.
  EXPECT_EQ(r->jobs[0].restarts, 1u);
  EXPECT_EQ(r->jobs[0].end, s.at + detection + repair + 600 * kSlowSec + kWork);
  EXPECT_EQ(sum.stragglers, 1u);
  EXPECT_EQ(sum.stragglers_detected, 1u);
  EXPECT_EQ(sum.interruptions_by_cause.at("Fail-slow GPU"), 1u);
  EXPECT_EQ(sum.failures, 0u);
  EXPECT_TRUE(sum.fail_slow);
  const double h = 3600.0;
  EXPECT_NEAR(sum.slow_pace_gpu_h, 16 * 1800 / h, 1e-6);
  EXPECT_NEAR(sum.slow_lost_work_gpu_h, 16 * (static_cast<double>(s.at) / 1e9 + 1800) / h, 1e-6);
  EXPECT_NEAR(sum.slow_restart_gpu_h, 16 * 600 / h, 1e-6);
  EXPECT_NEAR(sum.slow_gpu_h,
              sum.slow_pace_gpu_h + sum.slow_lost_work_gpu_h + sum.slow_restart_gpu_h, 1e-9);
  // Nothing else was lost: the fail-stop share is empty.
  EXPECT_NEAR(sum.lost_gpu_h, sum.slow_gpu_h, 1e-6);
  EXPECT_NEAR(sum.failure_lost_gpu_h, 0, 1e-6);
}

TEST(FailSlowEngine, DetectedTooLateTheJobEndsAtTheStragglersPace) {
  const FailureModel m = stragglers_only(kRate, 2.0, 1000 * kSlowHour, kSlowHour);
  const OneStraggler s = find_seed(m, 2 * kWork + kSlowHour);
  ASSERT_GT(s.seed, 0u) << "no seed with one early straggler";

  auto r = simulate(one_job_config(m, s.seed), {slow_job(0, 0, 16, kWork)});
  ASSERT_TRUE(r) << r.error().what();
  // Full pace until `at`, half pace for the rest of the work.
  EXPECT_EQ(r->jobs[0].restarts, 0u);
  EXPECT_EQ(r->jobs[0].end, s.at + 2 * (kWork - s.at));
  EXPECT_EQ(r->jobs[0].productive, kWork);
  EXPECT_EQ(r->summary.stragglers_detected, 0u);
  EXPECT_NEAR(r->summary.slow_pace_gpu_h, 16 * static_cast<double>(kWork - s.at) / 1e9 / 3600,
              1e-6);
}

// The time limit is wall time: a job that would have ended 2 h before it runs into it once
// slowed, and times out there.
TEST(FailSlowEngine, ASlowedJobMayRunIntoItsTimeLimit) {
  const FailureModel m = stragglers_only(kRate, 2.0, 1000 * kSlowHour, kSlowHour);
  const OneStraggler s = find_seed(m, 2 * kWork + kSlowHour);
  ASSERT_GT(s.seed, 0u) << "no seed with one early straggler";
  TraceJob limited = slow_job(0, 0, 16, kWork);
  limited.time_limit = kWork + 2 * kSlowHour;
  auto r = simulate(one_job_config(m, s.seed), {limited});
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_TRUE(r->jobs[0].timed_out);
  EXPECT_EQ(r->jobs[0].end, limited.time_limit);
  EXPECT_EQ(r->summary.timed_out, 1u);
}

// A busy cluster with checkpoints and fail-stop failures too, stragglers common: the same seed
// with later detection loses more GPU time to the stragglers, and more in all.
TEST(FailSlowEngine, ShorterDetectionLosesLessGpuTime) {
  const std::vector<TraceJob> jobs = workload(400, 2 * kSlowHour, 3);
  std::vector<double> slow, lost;
  for (const char* detect : {"5m", "30m", "2h", "8h"}) {
    SimConfig c = test_config("16x8", "backfill");
    c.failures = *failure_preset(std::string("llama3:scale=5,slow=0.02,slow_factor=1.5,") +
                                 "slow_detect=" + detect);
    c.checkpoint = *parse_checkpoint_policy("fixed:1h,write=30s,restart=5m");
    c.seed = 11;
    auto r = simulate(c, jobs);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_GT(r->summary.stragglers, 5u) << detect;
    slow.push_back(r->summary.slow_gpu_h);
    lost.push_back(r->summary.lost_gpu_h);
  }
  for (std::size_t i = 1; i < slow.size(); ++i) {
    EXPECT_GT(slow[i], slow[i - 1]) << "detection step " << i;
    EXPECT_GT(lost[i], lost[i - 1]) << "detection step " << i;
  }
}

void expect_same(const SimResult& a, const SimResult& b) {
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (std::size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].start, b.jobs[i].start) << i;
    EXPECT_EQ(a.jobs[i].end, b.jobs[i].end) << i;
    EXPECT_EQ(a.jobs[i].restarts, b.jobs[i].restarts) << i;
    EXPECT_EQ(a.jobs[i].productive, b.jobs[i].productive) << i;
  }
  EXPECT_EQ(a.summary.events, b.summary.events);
  EXPECT_EQ(a.summary.passes, b.summary.passes);
  EXPECT_EQ(a.summary.failures, b.summary.failures);
  EXPECT_EQ(a.summary.interruptions, b.summary.interruptions);
  // Bit for bit: the same sums in the same order.
  EXPECT_EQ(a.summary.lost_gpu_h, b.summary.lost_gpu_h);
  EXPECT_EQ(a.summary.productive_gpu_h, b.summary.productive_gpu_h);
  EXPECT_EQ(a.summary.goodput, b.summary.goodput);
  ASSERT_EQ(a.series.size(), b.series.size());
  for (std::size_t i = 0; i < a.series.size(); ++i) {
    EXPECT_EQ(a.series[i].down_gpus, b.series[i].down_gpus) << i;
    EXPECT_EQ(a.series[i].productive_gpus, b.series[i].productive_gpus) << i;
  }
}

// A rate of 0 leaves the run as it was whatever the other straggler settings say; a factor of
// 1 with detection never coming is a straggler that costs nothing.
TEST(FailSlowEngine, OffChangesNothing) {
  const std::vector<TraceJob> jobs = workload(300, 2 * kSlowHour, 5);
  SimConfig base = test_config("16x8", "backfill");
  base.failures = *failure_preset("llama3:scale=5");
  base.checkpoint = *parse_checkpoint_policy("daly,write=30s,restart=5m");
  base.seed = 4;
  auto a = simulate(base, jobs);
  ASSERT_TRUE(a) << a.error().what();
  EXPECT_GT(a->summary.interruptions, 0u);
  EXPECT_FALSE(a->summary.fail_slow);
  EXPECT_EQ(a->summary.slow_gpu_h, 0);

  SimConfig off = base;
  off.failures.slow = FailSlow{.per_gpu_day = 0, .factor = 3, .detection = 1, .repair = kSlowDay};
  auto b = simulate(off, jobs);
  ASSERT_TRUE(b) << b.error().what();
  expect_same(*a, *b);

  // Stragglers that slow nothing and are never found: the same starts and ends; only the
  // event count grows by the stragglers.
  SimConfig harmless = base;
  harmless.failures.slow =
      FailSlow{.per_gpu_day = 0.05, .factor = 1, .detection = 1000 * kSlowDay, .repair = kSlowDay};
  auto c = simulate(harmless, jobs);
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_GT(c->summary.stragglers, 0u);
  ASSERT_EQ(a->jobs.size(), c->jobs.size());
  for (std::size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].start, c->jobs[i].start) << i;
    EXPECT_EQ(a->jobs[i].end, c->jobs[i].end) << i;
  }
}

}  // namespace
}  // namespace cardiac::sim
