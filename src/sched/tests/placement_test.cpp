// SPDX-License-Identifier: Apache-2.0
// Tests for placement: NVLink/NUMA preference, fenced and outside-busy GPUs, shared packing by
// memory, exclusivity, pack vs spread, degraded last, multi-node spreading, and the indexed
// search against a brute-force one on random clusters.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/sched.h"
#include "sched/state.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test builders

std::vector<unsigned> gpus_of(const ScheduleResult& r, JobId id) {
  const Start* s = find_start(r, id);
  if (s == nullptr || s->placement.size() != 1) return {};
  return s->placement[0].gpus;
}

ScheduleResult run_placement(const Cluster& c, std::vector<Job> jobs,
                             std::string_view policy = "fcfs") {
  return schedule(c, jobs, Usage{}, policy_of(policy), kNow);
}

TEST(Placement, PrefersOneNvlinkDomainBestFit) {
  Cluster c = make_cluster(1, 8);
  for (unsigned i = 0; i < 8; ++i) c.nodes[0].gpus[i].nvlink_domain = i < 4 ? 0 : 1;
  c.running = {make_running(100, 0, {0, 1})};
  // 4 GPUs: domain 1 holds them all, domain 0 only 2.
  EXPECT_EQ(gpus_of(run_placement(c, {make_job(1, 4)}), 1), (std::vector<unsigned>{4, 5, 6, 7}));
  // 2 GPUs: domain 0's two free GPUs fit exactly, leaving domain 1 whole.
  EXPECT_EQ(gpus_of(run_placement(c, {make_job(1, 2)}), 1), (std::vector<unsigned>{2, 3}));
}

TEST(Placement, FallsBackToOneNumaNode) {
  Cluster c = make_cluster(1, 8);
  for (unsigned i = 0; i < 8; ++i) c.nodes[0].gpus[i].numa_node = i % 2;
  c.running = {make_running(100, 0, {0})};
  // NUMA 1 (GPUs 1, 3, 5, 7) holds 4, NUMA 0 only 3.
  EXPECT_EQ(gpus_of(run_placement(c, {make_job(1, 4)}), 1), (std::vector<unsigned>{1, 3, 5, 7}));
}

TEST(Placement, NeverOnFencedOrOutsideBusyGpus) {
  Cluster c = make_cluster(1, 8);
  for (unsigned i = 0; i < 5; ++i) c.nodes[0].gpus[i].health = GpuHealth::kFenced;
  c.nodes[0].gpus[5].busy_outside = true;
  const auto r = run_placement(c, {make_job(1, 2), make_job(2, 1)});
  EXPECT_EQ(gpus_of(r, 1), (std::vector<unsigned>{6, 7}));
  EXPECT_EQ(find_start(r, 2), nullptr);
  EXPECT_EQ(find_start(run_placement(c, {make_job(1, 3)}), 1), nullptr);
}

TEST(Placement, SharedJobsPackByDeclaredMemory) {
  Cluster c = make_cluster(1, 2, 24 * kGiB);
  std::vector<Job> jobs;
  for (JobId id = 1; id <= 3; ++id) {
    Job j = make_job(id, 1);
    j.shared = true;
    j.gpu_memory = 10 * kGiB;
    jobs.push_back(j);
  }
  const auto r = run_placement(c, jobs);
  EXPECT_EQ(gpus_of(r, 1), (std::vector<unsigned>{0}));
  EXPECT_EQ(gpus_of(r, 2), (std::vector<unsigned>{0}));  // 20 of 24 GiB
  EXPECT_EQ(gpus_of(r, 3), (std::vector<unsigned>{1}));  // 30 would not fit

  // Memory used outside the queue counts: 24 - 6 leaves room for one 10 GiB job on GPU 0.
  c.nodes[0].gpus[0].memory_used_outside = 6 * kGiB;
  const auto r2 = run_placement(c, jobs);
  EXPECT_EQ(gpus_of(r2, 1), (std::vector<unsigned>{0}));
  EXPECT_EQ(gpus_of(r2, 2), (std::vector<unsigned>{1}));
  EXPECT_EQ(gpus_of(r2, 3), (std::vector<unsigned>{1}));
}

TEST(Placement, ExclusiveAndSharedJobsNeverMeet) {
  Cluster c = make_cluster(1, 2);
  Running shared = make_running(100, 0, {0});
  shared.shared = true;
  shared.gpu_memory = kGiB;
  c.running = {shared};
  EXPECT_EQ(find_start(run_placement(c, {make_job(1, 2)}), 1), nullptr);
  EXPECT_EQ(gpus_of(run_placement(c, {make_job(1, 1)}), 1), (std::vector<unsigned>{1}));

  c.running = {make_running(100, 0, {0})};  // exclusive
  Job s = make_job(1, 1);
  s.shared = true;
  EXPECT_EQ(gpus_of(run_placement(c, {s}), 1), (std::vector<unsigned>{1}));
  s.gpus = 2;
  EXPECT_EQ(find_start(run_placement(c, {s}), 1), nullptr);
}

TEST(Placement, ExclusiveJobsGetDisjointGpus) {
  Cluster c = make_cluster(1, 8);
  const auto r = run_placement(c, {make_job(1, 3), make_job(2, 3), make_job(3, 2), make_job(4, 1)});
  std::vector<int> seen(8, 0);
  for (const Start& s : r.starts) {
    for (unsigned g : s.placement[0].gpus) ++seen[g];
  }
  EXPECT_EQ(seen, std::vector<int>(8, 1));
  EXPECT_EQ(find_start(r, 4), nullptr);
}

TEST(Placement, PackTakesTheFullestNodeSpreadTheEmptiest) {
  Cluster c = make_cluster(3, 8);
  c.running = {make_running(100, 0, {0, 1, 2, 3, 4, 5}), make_running(101, 1, {0, 1, 2, 3})};
  const auto pack = run_placement(c, {make_job(1, 2)});
  ASSERT_NE(find_start(pack, 1), nullptr);
  EXPECT_EQ(find_start(pack, 1)->placement[0].node, 0u);
  PolicyConfig spread = policy_of("fcfs");
  spread.spread = true;
  const auto s = schedule(c, {make_job(1, 2)}, Usage{}, spread, kNow);
  ASSERT_NE(find_start(s, 1), nullptr);
  EXPECT_EQ(find_start(s, 1)->placement[0].node, 2u);
}

TEST(Placement, DegradedGpusAreUsedLast) {
  Cluster c = make_cluster(2, 4);
  c.nodes[0].gpus[0].health = GpuHealth::kDegraded;
  c.running = {make_running(100, 0, {2, 3})};
  // Node 0 is fuller (2 free) but one of them is degraded: node 1 takes the 2-GPU job.
  const auto r = run_placement(c, {make_job(1, 2)});
  ASSERT_NE(find_start(r, 1), nullptr);
  EXPECT_EQ(find_start(r, 1)->placement[0].node, 1u);
  // On node 0 a 1-GPU job gets the healthy GPU 1.
  Cluster one = make_cluster(1, 4);
  one.nodes[0].gpus[0].health = GpuHealth::kDegraded;
  EXPECT_EQ(gpus_of(run_placement(one, {make_job(1, 1)}), 1), (std::vector<unsigned>{1}));
  // When nothing else fits, the degraded GPU is used.
  EXPECT_EQ(gpus_of(run_placement(one, {make_job(1, 4)}), 1), (std::vector<unsigned>{0, 1, 2, 3}));
}

TEST(Placement, MultiNodeUsesFewestNodesSpreadEvenly) {
  Cluster c = make_cluster(3, 8);
  c.running = {make_running(100, 1, {0, 1}), make_running(101, 2, {0, 1, 2})};
  Job big = make_job(1, 12);
  big.nodes = 2;
  const auto r = run_placement(c, {big});
  const Start* s = find_start(r, 1);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->placement.size(), 2u);
  EXPECT_EQ(s->placement[0].node, 0u);
  EXPECT_EQ(s->placement[1].node, 1u);  // 6 free: the fullest that holds 6
  EXPECT_EQ(s->placement[0].gpus.size(), 6u);
  EXPECT_EQ(s->placement[1].gpus.size(), 6u);

  Job eight = make_job(2, 8);
  eight.nodes = 4;
  const auto r8 = run_placement(c, {eight});
  const Start* one = find_start(r8, 2);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->placement.size(), 1u);  // fits on node 0 alone

  Job odd = make_job(3, 11);
  odd.nodes = 2;
  const auto r11 = run_placement(c, {odd});
  const Start* o = find_start(r11, 3);
  ASSERT_NE(o, nullptr);
  ASSERT_EQ(o->placement.size(), 2u);
  EXPECT_EQ(o->placement[0].gpus.size() + o->placement[1].gpus.size(), 11u);
}

TEST(Placement, GpuIndicesNeedNotBePositions) {
  Cluster c;
  c.nodes.push_back(make_node("n0", 0));
  for (unsigned idx : {7u, 3u, 5u}) c.nodes[0].gpus.push_back(Gpu{.index = idx});
  c.running = {make_running(100, 0, {3})};
  EXPECT_EQ(gpus_of(run_placement(c, {make_job(1, 2)}), 1), (std::vector<unsigned>{5, 7}));
}

// The indexed search finds a placement exactly when a brute-force count says one exists, and
// what it returns is usable, on random clusters with mixed memory, health, use and GPU models
// (every other seed), for jobs with random model lists.
TEST(Placement, IndexedSearchAgreesWithBruteForce) {
  for (unsigned seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    Cluster c;
    const std::vector<std::string> models = {"", "A", "B", "C"};
    const bool mixed = seed % 2 == 0;
    const int nodes = 1 + pick(mixed ? 12 : 6);
    for (int n = 0; n < nodes; ++n) {
      Node node = make_node("n" + std::to_string(n), 1 + pick(8));
      if (mixed) node.model = models[pick(4)];
      for (Gpu& g : node.gpus) {
        g.memory_bytes = (pick(3) == 0 ? 40 : 80) * kGiB;
        if (pick(5) == 0) g.memory_used_outside = pick(30) * kGiB;
        if (pick(8) == 0) g.health = GpuHealth::kFenced;
        if (pick(8) == 0) g.health = GpuHealth::kDegraded;
        if (pick(12) == 0) g.busy_outside = true;
        if (pick(3) == 0) {
          Running r = make_running(1000 + c.running.size(), static_cast<unsigned>(n), {g.index});
          r.shared = pick(2) == 0;
          r.gpu_memory = pick(40) * kGiB;
          c.running.push_back(r);
        }
      }
      c.nodes.push_back(node);
    }
    detail::ClusterState state(c);
    for (int t = 0; t < 20; ++t) {
      Job job = make_job(t + 1, static_cast<unsigned>(1 + pick(10)));
      job.nodes = static_cast<unsigned>(1 + pick(3));
      job.gpu_memory = pick(3) == 0 ? 0 : pick(85) * kGiB;
      job.shared = pick(3) == 0;
      if (mixed) {
        for (int m = pick(3); m > 0; --m) job.models.push_back(models[1 + pick(3)]);
      }
      const detail::Need need = state.need_of(job);
      detail::Need any_model = need;
      any_model.allowed = nullptr;
      auto accepts = [&](unsigned n) {
        return job.models.empty() || std::find(job.models.begin(), job.models.end(),
                                               c.nodes[n].model) != job.models.end();
      };
      std::vector<unsigned> per_node;
      for (unsigned n = 0; n < c.nodes.size(); ++n) {
        per_node.push_back(accepts(n) ? state.eligible(n, any_model) : 0);
      }
      std::sort(per_node.begin(), per_node.end(), std::greater<>());
      bool exists = false;
      for (unsigned k = 1; k <= std::min<unsigned>(need.max_nodes, per_node.size()) && !exists;
           ++k) {
        const unsigned q = need.gpus / k;
        const unsigned r = need.gpus % k;
        exists = q > 0 && per_node[k - 1] >= q && (r == 0 || per_node[r - 1] >= q + 1);
      }
      const auto a = state.find(need, pick(2) == 0);
      ASSERT_EQ(a.has_value(), exists) << "seed " << seed << " try " << t;
      if (!a) continue;
      ASSERT_EQ(a->gpus.size(), need.gpus);
      std::vector<unsigned> sorted = a->gpus;
      std::sort(sorted.begin(), sorted.end());
      ASSERT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
      for (unsigned g : a->gpus) {
        ASSERT_TRUE(accepts(state.node_of(g))) << "seed " << seed << " try " << t;
        const detail::GpuSlot& s = state.gpus()[g];
        ASSERT_TRUE(s.usable);
        ASSERT_EQ(s.exclusive, 0u);
        if (need.shared) {
          ASSERT_GE(s.room(), need.memory);
        } else {
          ASSERT_EQ(s.shared_jobs, 0u);
          ASSERT_GE(s.cap, need.memory);
        }
      }
      if (pick(2) == 0) state.apply(*a);
    }
  }
}

}  // namespace
}  // namespace cardiac::sched
