// SPDX-License-Identifier: Apache-2.0
// Tests for KeptOrder: with period 0 every pass is schedule()'s, through random histories;
// with a period the order and the priority factors change only once it is over.
#include "sched/kept_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;

std::string where(unsigned seed, int step) {
  return "seed " + std::to_string(seed) + " step " + std::to_string(step);
}

TEST(KeptOrder, PeriodZeroGivesScheduleOnEveryPass) {
  const char* policies[] = {"fcfs",     "priority",          "fairshare",
                            "backfill", "backfill:priority", "sjf"};
  for (unsigned seed = 0; seed < 36; ++seed) {
    std::mt19937_64 rng(seed);
    const PolicyConfig policy = policy_of(policies[seed % std::size(policies)]);
    Cluster cluster = make_cluster(2 + static_cast<unsigned>(rng() % 3), 4);
    Usage usage;
    usage.updated_at = kNow;
    KeptOrder kept(0);
    std::vector<Job> pending;
    JobId next = 1;
    TimeNs now = kNow;
    for (int step = 0; step < 60; ++step) {
      now += static_cast<TimeNs>(rng() % 600) * kNsPerSec;
      const unsigned what = static_cast<unsigned>(rng() % 10);
      if (what < 6) {
        Job j = make_job(next++, 1 + static_cast<unsigned>(rng() % 5), now);
        j.user = "u" + std::to_string(rng() % 4);
        j.priority = static_cast<int>(rng() % 4);
        j.nodes = rng() % 4 == 0 ? 2 : 1;
        j.time_limit = static_cast<DurationNs>(1 + rng() % 8) * kHour;
        j.held = rng() % 10 == 0;
        pending.push_back(j);
      } else if (what < 9 && !cluster.running.empty()) {
        cluster.running.erase(cluster.running.begin() +
                              static_cast<std::ptrdiff_t>(rng() % cluster.running.size()));
      } else {
        usage.usage["u" + std::to_string(rng() % 4)] += static_cast<double>(rng() % 5000);
      }
      // Shuffled: the live queue reads its jobs in whatever order the database gives.
      std::shuffle(pending.begin(), pending.end(), rng);
      const ScheduleResult want = schedule(cluster, pending, usage, policy, now);
      const ScheduleResult got = kept.pass(cluster, pending, usage, policy, now);
      EXPECT_EQ(got.order, want.order) << where(seed, step);
      EXPECT_EQ(got.blocker, want.blocker) << where(seed, step);
      EXPECT_EQ(got.reservation, want.reservation) << where(seed, step);
      EXPECT_EQ(got.reasons, want.reasons) << where(seed, step);
      ASSERT_EQ(got.priorities.size(), want.priorities.size()) << where(seed, step);
      for (std::size_t i = 0; i < got.priorities.size(); ++i) {
        EXPECT_EQ(got.priorities[i].job, want.priorities[i].job) << where(seed, step);
        EXPECT_EQ(got.priorities[i].total, want.priorities[i].total) << where(seed, step);
      }
      ASSERT_EQ(got.starts.size(), want.starts.size()) << where(seed, step);
      for (std::size_t i = 0; i < got.starts.size(); ++i) {
        EXPECT_EQ(got.starts[i].job, want.starts[i].job) << where(seed, step);
        ASSERT_EQ(got.starts[i].placement.size(), want.starts[i].placement.size());
        for (std::size_t k = 0; k < got.starts[i].placement.size(); ++k) {
          EXPECT_EQ(got.starts[i].placement[k].node, want.starts[i].placement[k].node);
          EXPECT_EQ(got.starts[i].placement[k].gpus, want.starts[i].placement[k].gpus);
        }
      }
      // The started jobs run (no time limit: they end only when the history ends them).
      for (const Start& s : want.starts) {
        auto it = std::find_if(pending.begin(), pending.end(),
                               [&](const Job& j) { return j.id == s.job; });
        cluster.running.push_back(Running{.id = s.job,
                                          .user = it->user,
                                          .account = {},
                                          .placement = s.placement,
                                          .shared = false,
                                          .gpu_memory = 0,
                                          .start_time = now,
                                          .time_limit = it->time_limit});
        pending.erase(it);
      }
    }
    EXPECT_GT(kept.recomputations(), 50u) << "seed " << seed;
  }
}

// The placement state kept between passes follows whatever changes in the cluster it is given:
// health, GPUs busy outside the queue, memory used outside it, jobs ending, starting, listed in
// another order or moved; every pass equals schedule() on that cluster.
TEST(KeptOrder, TheKeptStateFollowsEveryChangeOfTheCluster) {
  const char* policies[] = {"fcfs", "backfill", "priority", "backfill:priority"};
  std::size_t passes = 0;
  std::size_t rebuilds = 0;
  for (unsigned seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed);
    const PolicyConfig policy = policy_of(policies[seed % std::size(policies)]);
    Cluster cluster = make_cluster(3 + static_cast<unsigned>(rng() % 3), 4);
    Usage usage;
    usage.updated_at = kNow;
    KeptOrder kept(0);
    std::vector<Job> pending;
    JobId next = 1;
    TimeNs now = kNow;
    for (int step = 0; step < 60; ++step) {
      now += static_cast<TimeNs>(rng() % 600) * kNsPerSec;
      const unsigned what = static_cast<unsigned>(rng() % 16);
      Node& node = cluster.nodes[rng() % cluster.nodes.size()];
      Gpu& gpu = node.gpus[rng() % node.gpus.size()];
      if (what < 6) {
        Job j = make_job(next++, 1 + static_cast<unsigned>(rng() % 5), now);
        j.user = "u" + std::to_string(rng() % 4);
        j.nodes = rng() % 4 == 0 ? 2 : 1;
        j.time_limit = static_cast<DurationNs>(1 + rng() % 8) * kHour;
        if (rng() % 4 == 0) {
          j.shared = true;
          j.nodes = 1;
          j.gpus = 1;
          j.gpu_memory = (10 + rng() % 50) * kGiB;
        }
        pending.push_back(j);
      } else if (what < 8 && !cluster.running.empty()) {
        cluster.running.erase(cluster.running.begin() +
                              static_cast<std::ptrdiff_t>(rng() % cluster.running.size()));
      } else if (what < 10) {
        const GpuHealth h[] = {GpuHealth::kOk, GpuHealth::kDegraded, GpuHealth::kFenced};
        gpu.health = h[rng() % 3];
      } else if (what < 11) {
        gpu.busy_outside = !gpu.busy_outside;
      } else if (what < 12) {
        gpu.memory_used_outside = (rng() % 3) * 10 * kGiB;
      } else if (what < 13) {
        std::shuffle(cluster.running.begin(), cluster.running.end(), rng);
      } else if (what < 14 && !cluster.running.empty()) {
        // Moved (a restart elsewhere under the same id): its old GPUs free, the new ones busy.
        Running& r = cluster.running[rng() % cluster.running.size()];
        r.placement = {NodeGpus{.node = static_cast<unsigned>(rng() % cluster.nodes.size()),
                                .gpus = {static_cast<unsigned>(rng() % 4)}}};
      }
      std::shuffle(pending.begin(), pending.end(), rng);
      const ScheduleResult want = schedule(cluster, pending, usage, policy, now);
      const ScheduleResult got = kept.pass(cluster, pending, usage, policy, now);
      ++passes;
      EXPECT_EQ(got.order, want.order) << where(seed, step);
      EXPECT_EQ(got.blocker, want.blocker) << where(seed, step);
      EXPECT_EQ(got.reservation, want.reservation) << where(seed, step);
      ASSERT_EQ(got.reserved.size(), want.reserved.size()) << where(seed, step);
      for (std::size_t k = 0; k < got.reserved.size(); ++k) {
        EXPECT_EQ(got.reserved[k].node, want.reserved[k].node) << where(seed, step);
        EXPECT_EQ(got.reserved[k].gpus, want.reserved[k].gpus) << where(seed, step);
      }
      EXPECT_EQ(got.reasons, want.reasons) << where(seed, step);
      ASSERT_EQ(got.starts.size(), want.starts.size()) << where(seed, step);
      for (std::size_t i = 0; i < got.starts.size(); ++i) {
        EXPECT_EQ(got.starts[i].job, want.starts[i].job) << where(seed, step);
        ASSERT_EQ(got.starts[i].placement.size(), want.starts[i].placement.size());
        for (std::size_t k = 0; k < got.starts[i].placement.size(); ++k) {
          EXPECT_EQ(got.starts[i].placement[k].node, want.starts[i].placement[k].node);
          EXPECT_EQ(got.starts[i].placement[k].gpus, want.starts[i].placement[k].gpus);
        }
      }
      if (::testing::Test::HasFailure()) return;
      // Some starts are made, some not yet (the queue may fail to launch a runner): the next
      // cluster need not hold every start of the pass.
      for (const Start& st : want.starts) {
        if (rng() % 5 == 0) continue;
        auto it = std::find_if(pending.begin(), pending.end(),
                               [&](const Job& j) { return j.id == st.job; });
        cluster.running.push_back(Running{.id = st.job,
                                          .user = it->user,
                                          .account = {},
                                          .placement = st.placement,
                                          .shared = it->shared,
                                          .gpu_memory = it->gpu_memory,
                                          .start_time = now,
                                          .time_limit = it->time_limit});
        pending.erase(it);
      }
    }
    rebuilds += kept.rebuilds();
  }
  EXPECT_LT(rebuilds * 4, passes);  // mostly kept, not rebuilt
  EXPECT_GT(rebuilds, 40u);         // and rebuilt when it must be
}

// One busy GPU; fair share alone decides: the user with less usage goes first.
struct FairShareOnly {
  Cluster cluster = make_cluster(1, 1);
  Usage usage;
  PolicyConfig policy = policy_of("priority");
  std::vector<Job> pending;

  FairShareOnly() {
    cluster.running.push_back(make_running(100, 0, {0}));
    usage.updated_at = kNow;
    usage.usage = {{"a", 0}, {"b", 1000}};
    policy.weights = Weights{.age = 0, .fairshare = 1000, .job_size = 0, .qos = 0};
    for (JobId id : {1, 2}) {
      Job j = make_job(id, 1);
      j.user = id == 1 ? "b" : "a";
      pending.push_back(j);
    }
  }
};

TEST(KeptOrder, WithAPeriodTheOrderIsRefreshedOnlyOnceItIsOver) {
  FairShareOnly w;
  KeptOrder kept(5 * kMin);
  EXPECT_EQ(kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow).order,
            (std::vector<JobId>{2, 1}));
  // a's usage grows past b's: the next recomputation puts b first.
  w.usage.usage = {{"a", 1000}, {"b", 0}};
  const ScheduleResult before = kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow + 4 * kMin);
  EXPECT_EQ(before.order, (std::vector<JobId>{2, 1}));
  EXPECT_EQ(kept.recomputations(), 1u);
  ASSERT_EQ(before.priorities.size(), 2u);
  EXPECT_GT(before.priorities[0].fairshare, before.priorities[1].fairshare);  // as computed then

  // A job submitted in between is placed by the factors of the last recomputation: b's low one.
  Job late = make_job(3, 1, kNow + 4 * kMin);
  late.user = "b";
  w.pending.push_back(late);
  EXPECT_EQ(kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow + 4 * kMin).order,
            (std::vector<JobId>{2, 1, 3}));

  EXPECT_EQ(kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow + 5 * kMin).order,
            (std::vector<JobId>{1, 3, 2}));
  EXPECT_EQ(kept.recomputations(), 2u);
  // A pass in between needs no ranking of its own; a job that left is dropped.
  w.pending.erase(w.pending.begin());
  EXPECT_EQ(kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow + 6 * kMin).order,
            (std::vector<JobId>{3, 2}));
  EXPECT_EQ(kept.recomputations(), 2u);
}

TEST(KeptOrder, PeriodZeroRecomputesBeforeEveryPass) {
  FairShareOnly w;
  KeptOrder kept(0);
  EXPECT_EQ(kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow).order,
            (std::vector<JobId>{2, 1}));
  w.usage.usage = {{"a", 1000}, {"b", 0}};
  EXPECT_EQ(kept.pass(w.cluster, w.pending, w.usage, w.policy, kNow + kMin).order,
            (std::vector<JobId>{1, 2}));
  EXPECT_EQ(kept.recomputations(), 2u);
}

TEST(KeptOrder, AJobThatComesBackBeforeTheRecomputationKeepsItsPlace) {
  Cluster cluster = make_cluster(1, 1);
  cluster.running.push_back(make_running(100, 0, {0}));
  const PolicyConfig policy = policy_of("fcfs");
  KeptOrder kept(5 * kMin);
  std::vector<Job> pending = {make_job(1, 1, kNow - 2 * kHour), make_job(2, 1, kNow - kHour)};
  EXPECT_EQ(kept.pass(cluster, pending, {}, policy, kNow).order, (std::vector<JobId>{1, 2}));
  const Job one = pending[0];
  pending.erase(pending.begin());  // it runs for a while
  pending.push_back(make_job(3, 1, kNow));
  EXPECT_EQ(kept.pass(cluster, pending, {}, policy, kNow + kMin).order, (std::vector<JobId>{2, 3}));
  pending.push_back(one);  // requeued
  EXPECT_EQ(kept.pass(cluster, pending, {}, policy, kNow + 2 * kMin).order,
            (std::vector<JobId>{1, 2, 3}));
  EXPECT_EQ(kept.recomputations(), 1u);
}

TEST(KeptOrder, APriorityOutsideTheLastRangeRecomputesAtOnce) {
  Cluster cluster = make_cluster(1, 1);
  cluster.running.push_back(make_running(100, 0, {0}));
  PolicyConfig policy = policy_of("priority");
  policy.weights = Weights{.age = 0, .fairshare = 0, .job_size = 0, .qos = 1000};
  KeptOrder kept(5 * kMin);
  std::vector<Job> pending = {make_job(1, 1)};
  EXPECT_EQ(kept.pass(cluster, pending, {}, policy, kNow).order, (std::vector<JobId>{1}));
  Job high = make_job(2, 1, kNow);
  high.priority = 500;
  pending.push_back(high);
  EXPECT_EQ(kept.pass(cluster, pending, {}, policy, kNow + kMin).order, (std::vector<JobId>{2, 1}));
  EXPECT_EQ(kept.recomputations(), 2u);
}

}  // namespace
}  // namespace cardiac::sched
