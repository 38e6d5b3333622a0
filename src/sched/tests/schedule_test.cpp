// SPDX-License-Identifier: Apache-2.0
// Tests for the pass itself: strict order, held jobs, dependencies, impossible requests,
// feasible(), expected_start() and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/sched.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test builders

std::vector<JobId> started(const ScheduleResult& r) {
  std::vector<JobId> ids;
  for (const Start& s : r.starts) ids.push_back(s.job);
  return ids;
}

std::string fmt_behind(JobId id, std::string_view policy) {
  return "behind job " + std::to_string(id) + " in " + std::string(policy) + " order";
}

TEST(Strict, NothingPassesAJobThatCannotStart) {
  Cluster c = make_cluster(1, 8);
  c.running = {make_running(100, 0, {0, 1, 2, 3})};
  Job first = make_job(1, 2);
  first.priority = 10;  // keeps it first under priority, where job 2's size would win
  for (const char* p : {"fcfs", "priority", "fairshare", "sjf", "las"}) {
    const auto r =
        schedule(c, {first, make_job(2, 8), make_job(3, 1)}, Usage{}, policy_of(p), kNow);
    EXPECT_EQ(r.order, (std::vector<JobId>{1, 2, 3})) << p;
    EXPECT_EQ(started(r), (std::vector<JobId>{1})) << p;
    EXPECT_EQ(r.reasons.at(3), fmt_behind(2, p)) << p;
  }
}

TEST(Strict, HeldJobsDoNotBlock) {
  Cluster c = make_cluster(1, 2);
  Job held = make_job(1, 2);
  held.held = true;
  const auto r = schedule(c, {held, make_job(2, 2)}, Usage{}, policy_of("fcfs"), kNow);
  EXPECT_EQ(started(r), (std::vector<JobId>{2}));
  EXPECT_EQ(r.reasons.at(1), "held");
}

TEST(Strict, DependenciesWaitForSuccessWithoutBlocking) {
  Cluster c = make_cluster(1, 4);
  Job dep = make_job(2, 1);
  dep.after = {1, 3};
  std::vector<Job> jobs = {make_job(1, 1), dep, make_job(3, 1)};
  const auto r = schedule(c, jobs, Usage{}, policy_of("fcfs"), kNow, {1});
  EXPECT_EQ(started(r), (std::vector<JobId>{1, 3}));
  EXPECT_EQ(r.reasons.at(2), "waiting for job 3");
  // Both missing.
  EXPECT_EQ(schedule(c, jobs, Usage{}, policy_of("fcfs"), kNow).reasons.at(2),
            "waiting for jobs 1, 3");
  // Done: it starts.
  EXPECT_EQ(started(schedule(c, jobs, Usage{}, policy_of("fcfs"), kNow, {1, 3})),
            (std::vector<JobId>{1, 2, 3}));
}

TEST(Strict, ADependencyThatEndedBadlyIsNeverSatisfied) {
  Cluster c = make_cluster(1, 4);
  Job dep = make_job(2, 1);
  dep.after = {7};  // neither pending, running nor succeeded
  const auto r = schedule(c, {dep}, Usage{}, policy_of("fcfs"), kNow);
  EXPECT_TRUE(r.starts.empty());
  EXPECT_EQ(r.reasons.at(2), "dependency never satisfied: job 7 did not succeed");
  c.running = {make_running(7, 0, {0})};
  EXPECT_EQ(schedule(c, {dep}, Usage{}, policy_of("fcfs"), kNow).reasons.at(2),
            "waiting for job 7");
}

TEST(Strict, ImpossibleJobsAreSkippedWithTheReason) {
  Cluster c = make_cluster(2, 8);
  const auto r = schedule(c, {make_job(1, 9), make_job(2, 1)}, Usage{}, policy_of("fcfs"), kNow);
  EXPECT_EQ(started(r), (std::vector<JobId>{2}));
  EXPECT_EQ(r.reasons.at(1),
            "cannot run on this cluster: 9 GPUs requested, the largest node has 8");
}

// A job larger than the GPUs that are not fenced would hold the queue until a fence is
// cleared: it is skipped with what is short, under strict order and backfill alike.
TEST(Strict, AJobLargerThanTheHealthyGpusDoesNotBlock) {
  Cluster c = make_cluster(1, 8);
  c.nodes[0].gpus[3].health = GpuHealth::kFenced;
  for (const char* p : {"fcfs", "priority", "backfill"}) {
    const auto r = schedule(c, {make_job(1, 8), make_job(2, 2)}, Usage{}, policy_of(p), kNow);
    ASSERT_EQ(r.starts.size(), 1u) << p;
    EXPECT_EQ(r.starts[0].job, 2) << p;
    EXPECT_FALSE(r.blocker) << p;
    EXPECT_EQ(r.reasons.at(1),
              "needs 8 GPUs, 7 healthy; it waits for fenced GPUs to be cleared and does not "
              "hold back the jobs behind it")
        << p;
  }
  EXPECT_EQ(fits_healthy(c, make_job(1, 8)).error().message, "needs 8 GPUs, 7 healthy");
  EXPECT_TRUE(fits_healthy(c, make_job(1, 7)));
  // Busy GPUs still count as healthy: a job that fits once they free up keeps strict order.
  c.running = {make_running(100, 0, {0, 1, 2})};
  const auto r = schedule(c, {make_job(1, 7), make_job(2, 2)}, Usage{}, policy_of("fcfs"), kNow);
  EXPECT_TRUE(r.starts.empty());
  EXPECT_EQ(r.blocker, JobId{1});

  Cluster two = make_cluster(2, 4);
  two.nodes[0].gpus[0].health = GpuHealth::kFenced;
  two.nodes[1].gpus[2].health = GpuHealth::kFenced;
  EXPECT_EQ(fits_healthy(two, make_job(1, 4)).error().message,
            "needs 4 GPUs, the largest node has 3 healthy");
  Job wide = make_job(2, 8);
  wide.nodes = 2;
  EXPECT_EQ(fits_healthy(two, wide).error().message,
            "needs 8 GPUs on at most 2 nodes, the 2 largest nodes have 6 healthy");
}

TEST(Strict, ZeroGpuJobsStartWithNoPlacement) {
  Cluster c = make_cluster(1, 1);
  c.running = {make_running(100, 0, {0})};
  const auto r = schedule(c, {make_job(1, 0)}, Usage{}, policy_of("fcfs"), kNow);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_TRUE(r.starts[0].placement.empty());
}

TEST(Feasible, ImpossibleRequestsSayWhat) {
  Cluster c = make_cluster(2, 8, 80 * kGiB);
  EXPECT_TRUE(feasible(c, make_job(1, 8)));
  auto big = feasible(c, make_job(1, 9));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message, "9 GPUs requested, the largest node has 8");
  EXPECT_EQ(big.error().context, "job 1");

  Job multi = make_job(2, 17);
  multi.nodes = 4;
  ASSERT_FALSE(feasible(c, multi));
  EXPECT_EQ(feasible(c, multi).error().message, "17 GPUs requested, the cluster has 16");
  multi.gpus = 16;
  EXPECT_TRUE(feasible(c, multi));
  multi.nodes = 1;
  EXPECT_FALSE(feasible(c, multi));

  Job mem = make_job(3, 1);
  mem.gpu_memory = 100 * kGiB;
  ASSERT_FALSE(feasible(c, mem));
  EXPECT_EQ(feasible(c, mem).error().message,
            "100.0 GiB per GPU requested, the largest GPU has 80.0 GiB");

  Cluster one = make_cluster(1, 4);
  EXPECT_EQ(feasible(one, make_job(4, 5)).error().message, "5 GPUs requested, the machine has 4");
  EXPECT_EQ(feasible(Cluster{}, make_job(5, 1)).error().message, "the cluster has no GPUs");
  EXPECT_TRUE(feasible(Cluster{}, make_job(6, 0)));
}

TEST(ExpectedStart, NowOrWhenEnoughTimeLimitsRunOut) {
  Cluster c = make_cluster(1, 4);
  c.running = {make_running(100, 0, {0, 1}, kHour, kNow - 10 * kMin),
               make_running(101, 0, {2}, 2 * kHour, kNow - 10 * kMin)};
  EXPECT_EQ(expected_start(c, make_job(1, 1), kNow), kNow);
  EXPECT_EQ(expected_start(c, make_job(1, 3), kNow), kNow + 50 * kMin);
  EXPECT_EQ(expected_start(c, make_job(1, 4), kNow), kNow + 110 * kMin);
  c.running.push_back(make_running(102, 0, {3}));  // no limit: never frees
  EXPECT_EQ(expected_start(c, make_job(1, 4), kNow), std::nullopt);
}

TEST(Determinism, InputOrderDoesNotMatter) {
  std::mt19937 rng(7);
  Cluster c = make_cluster(4, 8);
  c.running = {make_running(100, 1, {0, 1, 2}, kHour)};
  std::vector<Job> jobs;
  for (JobId id = 1; id <= 30; ++id) {
    Job j = make_job(id, 1 + static_cast<unsigned>(rng() % 6));
    j.user = "u" + std::to_string(rng() % 4);
    j.time_limit = static_cast<DurationNs>(rng() % 3) * kHour;
    jobs.push_back(j);
  }
  for (const char* p : {"fcfs", "priority", "fairshare", "backfill:priority"}) {
    const auto a = schedule(c, jobs, Usage{}, policy_of(p), kNow);
    std::shuffle(jobs.begin(), jobs.end(), rng);
    const auto b = schedule(c, jobs, Usage{}, policy_of(p), kNow);
    EXPECT_EQ(a.order, b.order) << p;
    ASSERT_EQ(a.starts.size(), b.starts.size()) << p;
    for (std::size_t i = 0; i < a.starts.size(); ++i) {
      EXPECT_EQ(a.starts[i].job, b.starts[i].job);
      EXPECT_EQ(a.starts[i].placement.size(), b.starts[i].placement.size());
      EXPECT_EQ(a.starts[i].placement[0].node, b.starts[i].placement[0].node);
      EXPECT_EQ(a.starts[i].placement[0].gpus, b.starts[i].placement[0].gpus);
    }
    EXPECT_EQ(a.reasons, b.reasons) << p;
  }
}

}  // namespace
}  // namespace cardiac::sched
