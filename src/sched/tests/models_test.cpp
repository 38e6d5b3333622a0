// SPDX-License-Identifier: Apache-2.0
// Tests for GPU-model constraints: single-node, multi-node and shared placement on a mixed
// cluster, feasible() for missing models, impossible jobs not blocking strict order, backfill
// reservations and expected_start on the right model, the reasons, feasible() against a
// brute-force count on random mixed clusters, and NodeSet's intersections on large sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/node_set.h"
#include "sched/sched.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test builders

Node model_node(std::string name, unsigned gpus, std::string model,
                std::uint64_t memory = 80 * kGiB) {
  Node n = make_node(std::move(name), gpus, memory);
  n.model = std::move(model);
  return n;
}

Job model_job(JobId id, unsigned gpus, std::vector<std::string> models) {
  Job j = make_job(id, gpus);
  j.models = std::move(models);
  return j;
}

ScheduleResult run(const Cluster& c, std::vector<Job> jobs, std::string_view policy = "fcfs") {
  return schedule(c, jobs, Usage{}, policy_of(policy), kNow);
}

std::vector<unsigned> nodes_of(const ScheduleResult& r, JobId id) {
  std::vector<unsigned> out;
  if (const Start* s = find_start(r, id)) {
    for (const NodeGpus& ng : s->placement) out.push_back(ng.node);
  }
  return out;
}

// Node 0 (T4) is the fullest, so pack would pick it for any job that accepts it.
Cluster mixed() {
  Cluster c;
  c.nodes = {model_node("t4", 8, "T4"), model_node("v16", 8, "V100M16"),
             model_node("v32", 8, "V100M32"), model_node("unknown", 8, "")};
  c.running = {make_running(100, 0, {0, 1, 2, 3, 4, 5}), make_running(101, 1, {0, 1, 2, 3})};
  return c;
}

TEST(Models, SingleNodeJobsGoOnlyToTheirModels) {
  const Cluster c = mixed();
  EXPECT_EQ(nodes_of(run(c, {make_job(1, 2)}), 1), (std::vector<unsigned>{0}));
  EXPECT_EQ(nodes_of(run(c, {model_job(1, 2, {"V100M32"})}), 1), (std::vector<unsigned>{2}));
  // Of the two accepted models, pack takes the fuller node.
  EXPECT_EQ(nodes_of(run(c, {model_job(1, 2, {"V100M32", "V100M16"})}), 1),
            (std::vector<unsigned>{1}));
  // 3 GPUs do not fit on the T4 node: the next fullest that accepts them, never node 3.
  EXPECT_EQ(nodes_of(run(c, {model_job(1, 3, {"T4", "V100M32"})}), 1), (std::vector<unsigned>{2}));

  PolicyConfig spread = policy_of("fcfs");
  spread.spread = true;
  const auto s = schedule(c, {model_job(1, 1, {"T4", "V100M16"})}, Usage{}, spread, kNow);
  EXPECT_EQ(nodes_of(s, 1), (std::vector<unsigned>{1}));

  // Once every node of its model is busy, the job waits however idle the rest is.
  Cluster busy = c;
  busy.running.push_back(make_running(102, 2, {0, 1, 2, 3, 4, 5, 6, 7}));
  const auto r = run(busy, {model_job(1, 1, {"V100M32"}), make_job(2, 1)});
  EXPECT_EQ(find_start(r, 1), nullptr);
  EXPECT_EQ(find_start(r, 2), nullptr);  // strict order: behind job 1
  EXPECT_EQ(r.reasons.at(1),
            "needs 1 free GPU of model V100M32 on one node, at most 0 free on any such node");
}

TEST(Models, MultiNodeJobsSpanOnlyTheirModels) {
  Cluster c;
  c.nodes = {model_node("t0", 8, "T4"), model_node("a0", 8, "A10"), model_node("t1", 8, "T4"),
             model_node("a1", 8, "A10"), model_node("a2", 8, "A10")};
  c.running = {make_running(100, 4, {0, 1, 2})};
  Job big = model_job(1, 12, {"A10"});
  big.nodes = 2;
  const auto r = run(c, {big});
  EXPECT_EQ(nodes_of(r, 1), (std::vector<unsigned>{1, 3}));
  for (const NodeGpus& ng : find_start(r, 1)->placement) EXPECT_EQ(ng.gpus.size(), 6u);

  // 8, 5 and 5 free A10s (the T4 nodes have 8 each): 16 GPUs only as 6/5/5 on three nodes.
  c.running.push_back(make_running(101, 3, {0, 1, 2}));
  big.nodes = 3;
  big.gpus = 16;
  EXPECT_EQ(nodes_of(run(c, {big}), 1), (std::vector<unsigned>{1, 3, 4}));
  big.gpus = 17;  // 6/6/5: only one A10 node has 6
  EXPECT_EQ(find_start(run(c, {big}), 1), nullptr);
}

TEST(Models, SharedJobsShareOnlyGpusOfTheirModels) {
  Cluster c;
  c.nodes = {model_node("a10", 2, "A10", 24 * kGiB), model_node("t4", 2, "T4", 16 * kGiB)};
  Running shared = make_running(100, 0, {0});
  shared.shared = true;
  shared.gpu_memory = 4 * kGiB;
  c.running = {shared};
  Job s = model_job(1, 1, {"T4"});
  s.shared = true;
  s.gpu_memory = 4 * kGiB;
  Job s2 = s;
  s2.id = 2;
  // Node 0's shared GPU would be the first choice of a job without a list.
  Job any = s;
  any.id = 3;
  any.models = {};
  const auto r = run(c, {s, s2, any});
  ASSERT_NE(find_start(r, 1), nullptr);
  EXPECT_EQ(find_start(r, 1)->placement[0].node, 1u);
  ASSERT_NE(find_start(r, 2), nullptr);  // packs onto job 1's GPU
  EXPECT_EQ(find_start(r, 2)->placement[0].node, 1u);
  EXPECT_EQ(find_start(r, 2)->placement[0].gpus, find_start(r, 1)->placement[0].gpus);
  ASSERT_NE(find_start(r, 3), nullptr);
  EXPECT_EQ(find_start(r, 3)->placement[0].node, 0u);
  EXPECT_EQ(find_start(r, 3)->placement[0].gpus, (std::vector<unsigned>{0}));

  // Shared over several nodes: only the T4 nodes.
  c.nodes.push_back(model_node("t4b", 2, "T4", 16 * kGiB));
  Job wide = s;
  wide.gpus = 4;
  wide.nodes = 2;
  EXPECT_EQ(nodes_of(run(c, {wide}), 1), (std::vector<unsigned>{1, 2}));
  wide.gpus = 5;
  EXPECT_EQ(find_start(run(c, {wide}), 1), nullptr);
}

TEST(Models, FeasibleNamesTheMissingModel) {
  Cluster c;
  c.nodes = {model_node("a", 4, "A10", 24 * kGiB), model_node("b", 4, "A10", 24 * kGiB),
             model_node("v", 8, "V100M16", 16 * kGiB), model_node("x", 8, "")};
  EXPECT_TRUE(feasible(c, model_job(1, 4, {"A10"})));
  EXPECT_EQ(feasible(c, model_job(1, 1, {"V100M32"})).error().message, "no node of model V100M32");
  EXPECT_EQ(feasible(c, model_job(1, 1, {"P100", "G2", "G3"})).error().message,
            "no node of model P100, G2 or G3");
  EXPECT_EQ(feasible(c, model_job(1, 8, {"A10"})).error().message,
            "needs 8 GPUs of model A10, the largest such node has 4");
  EXPECT_TRUE(feasible(c, model_job(1, 8, {"A10", "V100M16"})));

  Job multi = model_job(1, 8, {"A10"});
  multi.nodes = 2;
  EXPECT_TRUE(feasible(c, multi));
  multi.gpus = 9;
  EXPECT_EQ(feasible(c, multi).error().message, "needs 9 GPUs of model A10, all such nodes hold 8");
  multi.models = {"A10", "V100M16"};
  EXPECT_TRUE(feasible(c, multi));  // 5 + 4
  multi.gpus = 13;
  EXPECT_EQ(feasible(c, multi).error().message,
            "needs 13 GPUs of model A10 or V100M16 on at most 2 nodes, the 2 largest such "
            "nodes hold 12");

  Job mem = model_job(1, 1, {"V100M16"});
  mem.gpu_memory = 20 * kGiB;  // the A10s and the unknown node have it, the V100s do not
  EXPECT_EQ(feasible(c, mem).error().message,
            "needs 20.0 GiB per GPU of model V100M16, the largest such GPU has 16.0 GiB");
  mem.models = {"A10"};
  mem.gpus = 5;
  EXPECT_EQ(feasible(c, mem).error().message,
            "needs 5 GPUs of model A10 with 20.0 GiB, the largest such node has 4");
}

TEST(Models, AMissingModelDoesNotBlockStrictOrder) {
  Cluster c;
  c.nodes = {model_node("a", 4, "A10"), model_node("t", 4, "T4")};
  for (const char* p : {"fcfs", "backfill"}) {
    const auto r = run(c, {model_job(1, 1, {"V100M32"}), model_job(2, 4, {"T4"})}, p);
    EXPECT_EQ(find_start(r, 1), nullptr) << p;
    EXPECT_EQ(nodes_of(r, 2), (std::vector<unsigned>{1})) << p;
    EXPECT_EQ(r.reasons.at(1), "cannot run on this cluster: no node of model V100M32") << p;
    EXPECT_FALSE(r.reservation) << p;
  }
}

// The T4 node frees in 3 hours, the V100 node in 1: a T4 job's reservation is at 3 hours on
// the T4 node, and only T4 jobs that finish by then may use its free GPUs.
TEST(Models, BackfillReservesOnTheRightModel) {
  Cluster c;
  c.nodes = {model_node("v", 8, "V100M32"), model_node("t", 8, "T4")};
  c.running = {make_running(100, 0, {0, 1, 2, 3, 4, 5, 6, 7}, kHour, kNow),
               make_running(101, 1, {0, 1, 2, 3, 4, 5}, 3 * kHour, kNow)};
  Job head = model_job(1, 8, {"T4"});
  Job past = model_job(2, 2, {"T4"});
  past.time_limit = 5 * kHour;
  Job quick = model_job(3, 2, {"T4"});
  quick.time_limit = kHour;
  const auto r = run(c, {head, past, quick}, "backfill");
  ASSERT_TRUE(r.reservation);
  EXPECT_EQ(*r.reservation, std::make_pair(JobId{1}, kNow + 3 * kHour));
  ASSERT_EQ(r.reserved.size(), 1u);
  EXPECT_EQ(r.reserved[0].node, 1u);
  EXPECT_EQ(find_start(r, 2), nullptr);
  EXPECT_EQ(r.reasons.at(2).rfind("reserved for job 1 from", 0), 0u) << r.reasons.at(2);
  EXPECT_EQ(nodes_of(r, 3), (std::vector<unsigned>{1}));
  // Job 3 took the last free T4s.
  EXPECT_EQ(r.reasons.at(1).rfind("needs 8 free GPUs of model T4 on one node, at most 0 free on "
                                  "any such node; GPUs reserved for it from",
                                  0),
            0u)
      << r.reasons.at(1);

  EXPECT_EQ(expected_start(c, head, kNow), kNow + 3 * kHour);
  EXPECT_EQ(expected_start(c, model_job(4, 8, {"V100M32"}), kNow), kNow + kHour);
  EXPECT_EQ(expected_start(c, make_job(5, 8), kNow), kNow + kHour);
  EXPECT_EQ(expected_start(c, model_job(6, 1, {"A10"}), kNow), std::nullopt);
}

// On an idle, healthy cluster, feasible() holds exactly when a brute-force count over the
// nodes of accepted models finds room, and then the job starts there.
TEST(Models, FeasibleAgreesWithBruteForce) {
  const std::vector<std::string> names = {"", "G2", "T4", "A10"};
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    Cluster c;
    const int nodes = 1 + pick(6);
    for (int n = 0; n < nodes; ++n) {
      c.nodes.push_back(model_node("n" + std::to_string(n), static_cast<unsigned>(pick(9)),
                                   names[pick(4)], (pick(2) == 0 ? 40 : 80) * kGiB));
    }
    for (int t = 0; t < 20; ++t) {
      Job j = make_job(t + 1, static_cast<unsigned>(1 + pick(12)));
      j.nodes = static_cast<unsigned>(1 + pick(3));
      j.gpu_memory = pick(2) == 0 ? 0 : 60 * kGiB;
      j.shared = pick(4) == 0;
      for (int m = pick(3); m > 0; --m) j.models.push_back(names[1 + pick(3)]);
      std::vector<unsigned> per_node;
      for (const Node& n : c.nodes) {
        const bool ok = j.models.empty() ||
                        std::find(j.models.begin(), j.models.end(), n.model) != j.models.end();
        unsigned k = 0;
        for (const Gpu& g : n.gpus) k += ok && g.memory_bytes >= j.gpu_memory ? 1 : 0;
        per_node.push_back(k);
      }
      std::sort(per_node.begin(), per_node.end(), std::greater<>());
      bool exists = false;
      for (unsigned k = 1; k <= std::min<unsigned>(j.nodes, per_node.size()) && !exists; ++k) {
        const unsigned q = j.gpus / k;
        const unsigned r = j.gpus % k;
        exists = q > 0 && per_node[k - 1] >= q && (r == 0 || per_node[r - 1] >= q + 1);
      }
      ASSERT_EQ(feasible(c, j).has_value(), exists) << "seed " << seed << " try " << t;
      const auto res = run(c, {j});
      const Start* s = find_start(res, j.id);
      ASSERT_EQ(s != nullptr, exists) << "seed " << seed << " try " << t;
      if (s == nullptr) continue;
      for (const NodeGpus& ng : s->placement) {
        const std::string& model = c.nodes[ng.node].model;
        ASSERT_TRUE(j.models.empty() ||
                    std::find(j.models.begin(), j.models.end(), model) != j.models.end());
      }
    }
  }
}

// Sizes past one summary word (4,096 nodes), densities from a few members to most.
TEST(NodeSetAnd, NextAndCountAgreeWithPlainSets) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const unsigned n = 1 + rng() % 20'000;
    const unsigned density[] = {1, 50, 500, 900};
    std::vector<bool> in_a(n);
    std::vector<bool> in_b(n);
    detail::NodeSet a;
    detail::NodeSet b;
    detail::NodeSet u;
    a.resize(n);
    b.resize(n);
    u.resize(n);
    const unsigned da = density[rng() % 4];
    const unsigned db = density[rng() % 4];
    for (unsigned i = 0; i < n; ++i) {
      if (rng() % 1000 < da) {
        in_a[i] = true;
        a.insert(i);
      }
      if (rng() % 1000 < db) {
        in_b[i] = true;
        b.insert(i);
      }
    }
    u.unite(a);
    u.unite(b);
    unsigned both = 0;
    unsigned either = 0;
    for (unsigned i = 0; i < n; ++i) {
      both += in_a[i] && in_b[i] ? 1 : 0;
      either += in_a[i] || in_b[i] ? 1 : 0;
      ASSERT_EQ(u.contains(i), in_a[i] || in_b[i]);
    }
    ASSERT_EQ(a.count_and(b), both) << "seed " << seed;
    ASSERT_EQ(u.size(), either) << "seed " << seed;
    // Walk the intersection from a few random starts and from 0.
    for (int t = 0; t < 20; ++t) {
      const unsigned from = t == 0 ? 0 : static_cast<unsigned>(rng() % (n + 70));
      unsigned want = detail::NodeSet::kNone;
      for (unsigned i = from; i < n; ++i) {
        if (in_a[i] && in_b[i]) {
          want = i;
          break;
        }
      }
      ASSERT_EQ(a.next_and(b, from), want) << "seed " << seed << " from " << from;
    }
    unsigned walked = 0;
    for (unsigned i = a.next_and(b, 0); i != detail::NodeSet::kNone; i = a.next_and(b, i + 1)) {
      ++walked;
    }
    ASSERT_EQ(walked, both) << "seed " << seed;
  }
}

}  // namespace
}  // namespace cardiac::sched
