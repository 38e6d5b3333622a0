// SPDX-License-Identifier: Apache-2.0
// The head's reservation for requests that take whole nodes, counted beside the state
// (WholeNodes), against the same reservation planned by releasing jobs on the state.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "sched/kept_order.h"
#include "sched/pass.h"
#include "sched/session.h"
#include "sched/state.h"
#include "support.h"

namespace cardiac::sched {
namespace {

using detail::Alloc;
using detail::ClusterState;
using testing::kHour;
using testing::kMin;
using testing::kNow;

// Nodes of 8 GPUs and a few smaller ones, two models; fenced, degraded and outside-busy GPUs;
// running jobs of whole and partial nodes, shared jobs, jobs without a limit, ends that tie
// and now and then two jobs on one GPU (bad input: counting must give way).
Cluster random_reserved_cluster(std::mt19937& rng) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  Cluster c;
  const int nodes = 4 + pick(40);
  for (int n = 0; n < nodes; ++n) {
    Node node = testing::make_node("n" + std::to_string(n), pick(8) == 0 ? 4 : 8);
    node.model = pick(3) == 0 ? "B" : "A";
    for (Gpu& g : node.gpus) {
      g.nvlink_domain = static_cast<int>(g.index / 4);
      if (pick(40) == 0) g.health = GpuHealth::kFenced;
      if (pick(40) == 0) g.health = GpuHealth::kDegraded;
      if (pick(80) == 0) g.busy_outside = true;
    }
    c.nodes.push_back(node);
  }
  // A few start times, so that several jobs end together.
  std::vector<TimeNs> starts;
  for (int i = 0; i < 6; ++i) starts.push_back(kNow - pick(600) * kMin);
  JobId next = 1;
  std::vector<std::vector<bool>> taken(c.nodes.size(), std::vector<bool>(8, false));
  for (int n = 0; n < nodes; ++n) {
    const auto count = static_cast<unsigned>(c.nodes[n].gpus.size());
    for (unsigned i = 0; i < count;) {
      if (taken[n][i]) {
        ++i;
        continue;
      }
      const int roll = pick(12);
      const DurationNs limit = pick(10) == 0 ? 0 : (60 + pick(1200)) * kMin;
      const TimeNs start = starts[static_cast<std::size_t>(pick(6))];
      Running r = testing::make_running(next++, static_cast<unsigned>(n), {}, limit, start);
      if (roll < 6) {
        unsigned w = 0;
        for (; w < static_cast<unsigned>(1 + pick(8)) && i < count && !taken[n][i]; ++w, ++i) {
          r.placement[0].gpus.push_back(i);
        }
        // Part of a job spanning the next node too.
        const auto last = c.nodes[n + 1 < nodes ? n + 1 : n].gpus.size() - 1;
        if (n + 1 < nodes && pick(3) == 0 && !taken[n + 1][last]) {
          taken[n + 1][last] = true;
          r.placement.push_back(NodeGpus{.node = static_cast<unsigned>(n + 1),
                                         .gpus = {static_cast<unsigned>(last)}});
        }
        c.running.push_back(r);
      } else if (roll < 7) {
        r.shared = true;
        r.gpu_memory = 10 * testing::kGiB;
        r.placement[0].gpus = {i};
        c.running.push_back(r);
        if (pick(2) == 0) {
          r.id = next++;
          c.running.push_back(r);
        }
        ++i;
      } else if (roll < 8 && pick(6) == 0) {
        // Overlaps the GPU of another job.
        r.placement[0].gpus = {i > 0 ? i - 1 : i};
        c.running.push_back(r);
        ++i;
      } else {
        ++i;
      }
    }
  }
  return c;
}

std::vector<unsigned> sorted(std::vector<unsigned> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ReservationProperty, WholeNodeCountsPlanWhatReleasingPlans) {
  int counted = 0;
  for (unsigned seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const Cluster cluster = random_reserved_cluster(rng);
    ClusterState state(cluster);
    const auto before = state.gpus();
    for (int head = 0; head < 6; ++head) {
      auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
      Job job = testing::make_job(head + 10'000, 0);
      job.nodes = 2 + static_cast<unsigned>(pick(static_cast<int>(cluster.nodes.size()) - 1));
      job.gpus = job.nodes * 8;
      if (pick(3) == 0) job.models = {"A"};
      const detail::Need need = state.need_of(job);
      ASSERT_TRUE(state.takes_whole_nodes(need)) << "seed " << seed;
      for (bool spread : {false, true}) {
        // Any hint gives the same reservation: none, or an end time before or after it.
        const TimeNs hint = pick(3) == 0 ? std::numeric_limits<TimeNs>::min()
                                         : kNow + static_cast<TimeNs>(pick(1200)) * kMin;
        auto counted_plan = detail::plan_reservation(state, need, spread, kNow, true, hint);
        auto released_plan = detail::plan_reservation(state, need, spread, kNow, false);
        ASSERT_EQ(counted_plan.has_value(), released_plan.has_value())
            << "seed " << seed << " head " << head;
        if (counted_plan) {
          ++counted;
          EXPECT_EQ(counted_plan->first, released_plan->first) << "seed " << seed;
          EXPECT_EQ(sorted(counted_plan->second.gpus), sorted(released_plan->second.gpus))
              << "seed " << seed << " head " << head;
        }
      }
    }
    // Both leave the state as it came.
    for (std::size_t g = 0; g < before.size(); ++g) {
      ASSERT_EQ(state.gpus()[g].exclusive, before[g].exclusive);
      ASSERT_EQ(state.gpus()[g].shared_jobs, before[g].shared_jobs);
      ASSERT_EQ(state.gpus()[g].usable, before[g].usable);
    }
  }
  EXPECT_GT(counted, 500);  // most heads get a plan, so the comparison is not vacuous
}

// Backfill passes of a Session through random histories of arrivals, ends, fences and steps
// where nothing happens (the pass then reuses the reservation the last one planned), each
// against schedule() on a copy of the cluster: the reservation, its GPUs and the starts.
// Whole-node jobs (2-4 nodes of 8) make most heads; small jobs backfill behind them.
TEST(ReservationProperty, KeptReservationsEqualFreshOnes) {
  unsigned kept = 0;  // passes whose reservation had a predecessor to keep
  for (unsigned seed = 0; seed < 80; ++seed) {
    std::mt19937_64 rng(seed);
    PolicyConfig policy = testing::policy_of("backfill");
    policy.explain = seed % 2 == 0;
    policy.spread = seed % 3 == 0;
    const Cluster base = testing::make_cluster(6 + static_cast<unsigned>(rng() % 6), 8);
    Session s(base.nodes);
    std::vector<Job> pending;
    JobId next = 1;
    TimeNs now = kNow;
    JobId last = -1;  // the last pass's head, -1 none
    for (int step = 0; step < 120; ++step) {
      now += static_cast<TimeNs>(rng() % 300) * kNsPerSec;
      const unsigned what = static_cast<unsigned>(rng() % 10);
      if (what < 4) {
        Job j = testing::make_job(next++, 1 + static_cast<unsigned>(rng() % 8), now);
        if (rng() % 3 == 0) {
          j.nodes = 2 + static_cast<unsigned>(rng() % 3);
          j.gpus = 8 * j.nodes;
        }
        j.time_limit = static_cast<DurationNs>(1 + rng() % 12) * kHour;
        pending.push_back(j);
      } else if (what < 6 && !s.cluster().running.empty()) {
        s.end(s.cluster().running[rng() % s.cluster().running.size()].id);
      } else if (what < 7) {
        const unsigned n = static_cast<unsigned>(rng() % s.cluster().nodes.size());
        s.set_health(n, static_cast<unsigned>(rng() % 8),
                     rng() % 2 == 0 ? GpuHealth::kFenced : GpuHealth::kOk);
      }  // else nothing changes before the pass
      const Cluster copy = s.cluster();
      const ScheduleResult want = schedule(copy, pending, {}, policy, now);
      const ScheduleResult got = s.pass(pending, {}, policy, now);
      const std::string where = "seed " + std::to_string(seed) + " step " + std::to_string(step);
      ASSERT_EQ(got.reservation, want.reservation) << where;
      ASSERT_EQ(got.reserved.size(), want.reserved.size()) << where;
      for (std::size_t k = 0; k < got.reserved.size(); ++k) {
        ASSERT_EQ(got.reserved[k].node, want.reserved[k].node) << where;
        ASSERT_EQ(got.reserved[k].gpus, want.reserved[k].gpus) << where;
      }
      ASSERT_EQ(got.starts.size(), want.starts.size()) << where;
      for (std::size_t i = 0; i < got.starts.size(); ++i) {
        ASSERT_EQ(got.starts[i].job, want.starts[i].job) << where;
        ASSERT_EQ(got.starts[i].placement.size(), want.starts[i].placement.size()) << where;
        for (std::size_t k = 0; k < got.starts[i].placement.size(); ++k) {
          ASSERT_EQ(got.starts[i].placement[k].gpus, want.starts[i].placement[k].gpus) << where;
        }
      }
      const JobId head = got.reservation ? got.reservation->first : -1;
      if (head >= 0 && head == last) ++kept;
      last = head;
      for (const Start& st : got.starts) {
        std::erase_if(pending, [&](const Job& j) { return j.id == st.job; });
      }
    }
  }
  EXPECT_GT(kept, 1000u);  // the same head across passes, so reuse was tried
}

// The live queue hands over its cluster afresh each pass: a running job whose time limit
// grew (scontrol update) while nothing else changed moves the reservation with it.
TEST(Reservation, ALongerTimeLimitMovesTheLiveQueuesReservation) {
  Cluster cluster = testing::make_cluster(2, 8);
  cluster.running.push_back(
      testing::make_running(1, 0, {0, 1, 2, 3, 4, 5, 6, 7}, 2 * kHour, kNow - kHour));
  cluster.running.push_back(
      testing::make_running(2, 1, {0, 1, 2, 3, 4, 5, 6, 7}, 3 * kHour, kNow - kHour));
  Job head = testing::make_job(10, 16);
  head.nodes = 2;
  head.time_limit = kHour;
  const std::vector<Job> pending{head};
  const PolicyConfig policy = testing::policy_of("backfill");
  KeptOrder kept(0);
  for (DurationNs limit : {3 * kHour, 3 * kHour, 5 * kHour, 5 * kHour}) {
    cluster.running[1].time_limit = limit;
    const ScheduleResult got = kept.pass(cluster, pending, {}, policy, kNow);
    ASSERT_TRUE(got.reservation.has_value());
    EXPECT_EQ(got.reservation->second, kNow - kHour + limit);
    EXPECT_EQ(got.reservation, schedule(cluster, pending, {}, policy, kNow).reservation);
  }
  EXPECT_EQ(kept.rebuilds(), 1u);  // kept between passes, not rebuilt
}

TEST(Reservation, OnlyExclusiveWholeNodeRequestsAreCounted) {
  const Cluster cluster = testing::make_cluster(4, 8);
  const ClusterState state(cluster);
  auto need = [&](unsigned gpus, unsigned nodes) {
    Job j = testing::make_job(1, gpus);
    j.nodes = nodes;
    return state.need_of(j);
  };
  EXPECT_TRUE(state.takes_whole_nodes(need(16, 2)));
  EXPECT_FALSE(state.takes_whole_nodes(need(12, 2)));  // 6 GPUs a node: any node count up to 2
  EXPECT_FALSE(state.takes_whole_nodes(need(16, 3)));  // 2 or 3 nodes
  EXPECT_FALSE(state.takes_whole_nodes(need(8, 1)));   // one node: find_single
  EXPECT_FALSE(state.takes_whole_nodes(need(40, 5)));  // more nodes than the cluster has
  Job shared = testing::make_job(2, 16);
  shared.nodes = 2;
  shared.shared = true;
  EXPECT_FALSE(state.takes_whole_nodes(state.need_of(shared)));
  Job memory = testing::make_job(3, 16);
  memory.nodes = 2;
  memory.gpu_memory = testing::kGiB;
  EXPECT_FALSE(state.takes_whole_nodes(state.need_of(memory)));
}

}  // namespace
}  // namespace cardiac::sched
