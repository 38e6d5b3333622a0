// SPDX-License-Identifier: Apache-2.0
// Tests for the words of the waiting reasons, exactly as `cardiac why` shows them.
#include <gtest/gtest.h>

#include "sched/sched.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test builders

std::string reason(const Cluster& c, const std::vector<Job>& jobs, JobId id,
                   std::string_view policy = "fcfs") {
  const auto r = schedule(c, jobs, Usage{}, policy_of(policy), kNow);
  auto it = r.reasons.find(id);
  return it == r.reasons.end() ? "(started)" : it->second;
}

TEST(Reasons, OneMachineNamesFencedGpus) {
  Cluster c = make_cluster(1, 8);
  c.nodes[0].gpus[3].health = GpuHealth::kFenced;
  c.nodes[0].gpus[5].health = GpuHealth::kFenced;
  c.running = {make_running(100, 0, {0, 1, 2, 4})};
  EXPECT_EQ(reason(c, {make_job(7, 4), make_job(8, 1)}, 7),
            "needs 4 free GPUs, 2 free (GPUs 3, 5 fenced)");
  EXPECT_EQ(reason(c, {make_job(7, 4), make_job(8, 1)}, 8), "behind job 7 in fcfs order");
  c.nodes[0].gpus[6].busy_outside = true;
  EXPECT_EQ(reason(c, {make_job(7, 2)}, 7),
            "needs 2 free GPUs, 1 free (GPUs 3, 5 fenced; GPU 6 busy outside the queue)");
}

TEST(Reasons, ClusterCountsPerNode) {
  Cluster c = make_cluster(3, 8);
  c.nodes[2].gpus[0].health = GpuHealth::kFenced;
  c.running = {make_running(100, 0, {0, 1, 2, 3, 4, 5}), make_running(101, 1, {0, 1, 2, 3, 4}),
               make_running(102, 2, {1, 2, 3, 4, 5, 6, 7})};
  EXPECT_EQ(reason(c, {make_job(1, 4)}, 1),
            "needs 4 free GPUs on one node, at most 3 free on any node (1 GPU fenced)");
  Job wide = make_job(1, 8);
  wide.nodes = 2;
  EXPECT_EQ(reason(c, {wide}, 1),
            "needs 8 free GPUs on at most 2 nodes, the 2 emptiest nodes have 5 free (1 GPU "
            "fenced)");
}

TEST(Reasons, MemoryAndSharing) {
  Cluster c = make_cluster(1, 2, 24 * kGiB);
  c.running = {make_running(100, 0, {0})};
  Job big = make_job(1, 1);
  big.gpu_memory = 30 * kGiB;
  EXPECT_EQ(reason(c, {big}, 1),
            "cannot run on this cluster: 30.0 GiB per GPU requested, the largest GPU has 24.0 "
            "GiB");
  Job two = make_job(2, 2);
  two.gpu_memory = 20 * kGiB;
  EXPECT_EQ(reason(c, {two}, 2), "needs 2 free GPUs with 20.0 GiB, 1 free");
  Job shared = make_job(3, 2);
  shared.shared = true;
  shared.gpu_memory = 4 * kGiB;
  EXPECT_EQ(reason(c, {shared}, 3), "needs 2 GPUs with 4.0 GiB unused to share, 1 usable");
}

TEST(Reasons, PolicyNameInBehind) {
  Cluster c = make_cluster(1, 2);
  c.running = {make_running(100, 0, {0})};
  Job first = make_job(1, 2);
  first.priority = 5;
  EXPECT_EQ(reason(c, {first, make_job(2, 1)}, 2, "priority"), "behind job 1 in priority order");
}

TEST(Reasons, EveryWaitingJobHasOneAndStartedJobsNone) {
  Cluster c = make_cluster(2, 4);
  c.running = {make_running(100, 0, {0, 1, 2}, kHour)};
  std::vector<Job> jobs;
  for (JobId id = 1; id <= 12; ++id) {
    Job j = make_job(id, 1 + static_cast<unsigned>(id % 4));
    j.time_limit = (id % 3) * kHour;
    j.held = id == 5;
    jobs.push_back(j);
  }
  for (const char* p : {"fcfs", "backfill", "priority", "backfill:las"}) {
    const auto r = schedule(c, jobs, Usage{}, policy_of(p), kNow);
    EXPECT_EQ(r.reasons.size() + r.starts.size(), jobs.size()) << p;
    for (const Start& s : r.starts) EXPECT_FALSE(r.reasons.contains(s.job)) << p;
    for (const auto& [id, text] : r.reasons) EXPECT_FALSE(text.empty()) << p;
    EXPECT_EQ(r.order.size(), jobs.size());
    EXPECT_EQ(r.priorities.size(), jobs.size());
  }
}

}  // namespace
}  // namespace cardiac::sched
