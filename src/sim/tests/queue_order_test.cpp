// SPDX-License-Identifier: Apache-2.0
// The pending queue kept in policy order: with priorities recomputed before every pass it
// gives exactly the schedule of ranking the whole queue on every pass, for every policy; with
// a calculation period the order holds between recomputations.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/tests/support.h"

namespace cardiac::sim {
namespace {

constexpr TimeNs kOrderSec = kNsPerSec;

TraceJob order_job(std::int64_t id, double submit_s, unsigned gpus, double duration_s,
                   const std::string& user) {
  TraceJob t;
  t.id = id;
  t.name = std::to_string(id);
  t.submit = static_cast<TimeNs>(submit_s * 1e9);
  t.gpus = gpus;
  t.duration = static_cast<DurationNs>(duration_s * 1e9);
  t.user = user;
  return t;
}

std::vector<TraceJob> random_trace(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<TraceJob> jobs;
  double at = 0;
  const int n = pick(10, 60);
  for (int i = 0; i < n; ++i) {
    at += pick(0, 2) == 0 ? 0 : pick(1, 400);  // some arrive together
    const int size = pick(0, 9);
    const unsigned gpus = size < 5 ? 1 : size < 7 ? 2 : size < 8 ? 4 : size < 9 ? 8 : 12;
    TraceJob t = order_job(i, at, gpus, pick(1, 4) == 1 ? pick(600, 4000) : pick(10, 600),
                           "u" + std::to_string(pick(0, 4)));
    t.priority = pick(-2, 5);
    if (pick(0, 3) == 0) t.time_limit = static_cast<DurationNs>(pick(5, 3000)) * kOrderSec;
    if (gpus == 1 && pick(0, 3) == 0) t.gpu_share = pick(0, 1) ? 0.5 : 0.25;
    jobs.push_back(std::move(t));
  }
  return jobs;
}

// Random workloads (sizes, users, QOS priorities, time limits, shared GPUs, failures and
// requeues on every other seed): the ordered queue with period 0 starts and ends every job
// exactly when ranking the whole queue on every pass does, under every policy.
TEST(SimQueueOrder, PeriodZeroEqualsRankingEveryPass) {
  const std::vector<std::string> policies = {
      "fcfs",     "priority",          "fairshare",          "sjf",          "las",
      "backfill", "backfill:priority", "backfill:fairshare", "backfill:sjf", "backfill:las"};
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<TraceJob> jobs = random_trace(rng);
    for (const std::string& policy : policies) {
      SimConfig c = test_config(seed % 3 == 0 ? "3x4" : "2x8", policy);
      c.backfill_interval = seed % 2 == 0 ? 0 : 30 * kOrderSec;
      c.priority_calc_period = 0;
      c.policy.weights.max_age = 3600 * kOrderSec;  // ages that matter within the run
      if (seed % 2 == 1) {
        c.failures = *failure_preset("llama3:scale=2000");
        c.checkpoint = *parse_checkpoint_policy("young");
      }
      c.seed = seed;
      auto ordered = simulate(c, jobs);
      c.rank_every_pass = true;
      auto ranked = simulate(c, jobs);
      ASSERT_TRUE(ordered && ranked);
      ASSERT_EQ(ordered->jobs.size(), ranked->jobs.size());
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const JobRecord& a = ordered->jobs[i];
        const JobRecord& b = ranked->jobs[i];
        ASSERT_EQ(a.start, b.start) << policy << ", seed " << seed << ", job " << i;
        ASSERT_EQ(a.end, b.end) << policy << ", seed " << seed << ", job " << i;
        ASSERT_EQ(a.restarts, b.restarts) << policy << ", seed " << seed << ", job " << i;
      }
      EXPECT_EQ(ordered->summary.passes, ranked->summary.passes) << policy << ", seed " << seed;
    }
  }
}

// One GPU. Job 0 (user a) runs 0–100 s; job 1 (a) arrives at 10 s, job 2 (b) at 20 s, both
// before a has any usage, so the factors computed then tie and submit order decides. When job
// 0 ends, a has 100 GPU-seconds: recomputed at once (period 0) b goes first; with a period of
// an hour the order of 20 s holds and job 1 goes first.
TEST(SimQueueOrder, FairShareOrderHoldsBetweenRecomputations) {
  const std::vector<TraceJob> jobs = {order_job(0, 0, 1, 100, "a"), order_job(1, 10, 1, 100, "a"),
                                      order_job(2, 20, 1, 100, "b")};
  SimConfig c = test_config("1x1", "fairshare");
  c.priority_calc_period = 0;
  auto now = simulate(c, jobs);
  c.priority_calc_period = 3600 * kOrderSec;
  auto later = simulate(c, jobs);
  ASSERT_TRUE(now && later);
  EXPECT_EQ(now->jobs[1].start, 200 * kOrderSec);
  EXPECT_EQ(now->jobs[2].start, 100 * kOrderSec);
  EXPECT_EQ(later->jobs[1].start, 100 * kOrderSec);
  EXPECT_EQ(later->jobs[2].start, 200 * kOrderSec);
}

// Multifactor priority: a job arriving between recomputations is placed by its priority at
// arrival, and the order holds until the period is over even as ages change.
TEST(SimQueueOrder, PriorityKeysNewArrivalsAndHoldsTheOrder) {
  // One GPU held until 100 s; job 1 (QOS 0) waits from 10 s, job 2 (QOS 5) arrives at 20 s.
  std::vector<TraceJob> jobs = {order_job(0, 0, 1, 100, "a"), order_job(1, 10, 1, 100, "a"),
                                order_job(2, 20, 1, 100, "a")};
  jobs[2].priority = 5;
  SimConfig c = test_config("1x1", "priority");
  c.priority_calc_period = 3600 * kOrderSec;
  auto r = simulate(c, jobs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->jobs[2].start, 100 * kOrderSec);  // placed ahead at arrival, by its QOS
  EXPECT_EQ(r->jobs[1].start, 200 * kOrderSec);
}

}  // namespace
}  // namespace cardiac::sim
