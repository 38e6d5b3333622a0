// SPDX-License-Identifier: Apache-2.0
// Tests for EASY backfill: the Slurm one-machine scenario, jobs without time limits, and a
// property test over random workloads against an independent earliest-start oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/sched.h"
#include "sched/tests/easy_reference.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test builders

// Replays the measured Slurm 22.05 behaviour (reference/scheduling.md 1.7): a 4-node job
// blocked by a running 10-minute job gets a reservation at that job's limit; a 1-minute 1-GPU
// job is backfilled; a 30-minute job stays pending because it would delay the reservation.
TEST(Backfill, SlurmFourNodeScenario) {
  Cluster c = make_cluster(4, 4);
  c.running = {make_running(100, 0, {0}, 10 * kMin, kNow - kMin)};
  Job wide = make_job(1, 16);
  wide.nodes = 4;
  wide.time_limit = 60 * kMin;
  Job quick = make_job(2, 1);
  quick.time_limit = kMin;
  Job slow = make_job(3, 1);
  slow.time_limit = 30 * kMin;
  const auto r = schedule(c, {wide, quick, slow}, Usage{}, policy_of("backfill"), kNow);
  ASSERT_TRUE(r.reservation);
  EXPECT_EQ(r.reservation->first, 1);
  EXPECT_EQ(r.reservation->second, kNow + 9 * kMin);
  EXPECT_EQ(r.reserved.size(), 4u);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].job, 2);
  EXPECT_EQ(r.reasons.at(3),
            "reserved for job 1 from 2027-01-15T08:09:00.000Z (in 9m 00s); it would not finish "
            "by then");
  EXPECT_EQ(r.reasons.at(1),
            "needs 16 free GPUs on at most 4 nodes, the 4 emptiest nodes have 14 free; GPUs "
            "reserved for it from 2027-01-15T08:09:00.000Z (in 9m 00s)");

  // Strict fcfs starts nothing.
  EXPECT_TRUE(schedule(c, {wide, quick, slow}, Usage{}, policy_of("fcfs"), kNow).starts.empty());
}

TEST(Backfill, NoTimeLimitMeansOnlyGpusTheReservationDoesNotNeed) {
  Cluster c = make_cluster(2, 4);
  c.running = {make_running(100, 0, {0, 1}, kHour), make_running(101, 1, {0, 1, 2})};
  Job head = make_job(1, 4);
  Job endless = make_job(2, 1);
  const auto r = schedule(c, {head, endless}, Usage{}, policy_of("backfill"), kNow);
  ASSERT_TRUE(r.reservation);
  EXPECT_EQ(r.reserved[0].node, 0u);
  // Node 0's free GPUs are reserved; node 1's last GPU is not.
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].placement[0].node, 1u);

  c.running[1].placement[0].gpus = {0, 1, 2, 3};
  const auto r2 = schedule(c, {head, endless}, Usage{}, policy_of("backfill"), kNow);
  EXPECT_TRUE(r2.starts.empty());
  EXPECT_NE(r2.reasons.at(2).find("a job without a time limit cannot run ahead of it"),
            std::string::npos);
}

TEST(Backfill, AHeadWithoutAPlanBlocksLikeStrictOrder) {
  Cluster c = make_cluster(1, 4);
  c.running = {make_running(100, 0, {0, 1})};  // no limit: never frees
  Job quick = make_job(2, 1);
  quick.time_limit = kMin;
  const auto r = schedule(c, {make_job(1, 4), quick}, Usage{}, policy_of("backfill"), kNow);
  EXPECT_FALSE(r.reservation);
  EXPECT_TRUE(r.starts.empty());
  EXPECT_EQ(r.reasons.at(2), "behind job 1 in fcfs order (job 1 has no planned start)");
  EXPECT_EQ(r.reasons.at(1),
            "needs 4 free GPUs, 2 free; no start can be planned: it does not fit even after "
            "every running job reaches its time limit");
}

// The trace at t=20 on one 8-GPU machine: GPUs 0-1 idle (job 0 ended), job 1 on 2-3
// until 200, job 2 on 4-7 until 100. Job 3 (4 GPUs) is the head, reserved at 100 on 4-7, the
// GPUs busy now; job 4 (2 GPUs, 1000 s) runs past 100 but takes only the 2 GPUs extra then.
TEST(Backfill, TheReservationTakesGpusBusyNowSoIdleOnesStayUsable) {
  constexpr DurationNs kSec = kNsPerSec;
  Cluster c = make_cluster(1, 8);
  c.running = {make_running(1, 0, {2, 3}, 200 * kSec, kNow - 20 * kSec),
               make_running(2, 0, {4, 5, 6, 7}, 100 * kSec, kNow - 20 * kSec)};
  Job head = make_job(3, 4);
  head.time_limit = 50 * kSec;
  Job tail = make_job(4, 2);
  tail.time_limit = 1000 * kSec;
  const auto r = schedule(c, {head, tail}, Usage{}, policy_of("backfill"), kNow);
  ASSERT_TRUE(r.reservation);
  EXPECT_EQ(r.reservation->second, kNow + 80 * kSec);
  ASSERT_EQ(r.reserved.size(), 1u);
  EXPECT_EQ(r.reserved[0].gpus, (std::vector<unsigned>{4, 5, 6, 7}));
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].job, 4);
  EXPECT_EQ(r.starts[0].placement[0].gpus, (std::vector<unsigned>{0, 1}));
}

// Of the GPUs free at the shadow time the busy ones come first, idle ones only for the rest;
// a job that ends in time then goes onto those reserved idle GPUs (not where NVLink best fit
// would put it), leaving the others to a job that runs past the reservation.
TEST(Backfill, ShortJobsUseTheReservedIdleGpusFirst) {
  constexpr DurationNs kSec = kNsPerSec;
  Cluster c = make_cluster(1, 8);
  for (unsigned i = 0; i < 8; ++i) c.nodes[0].gpus[i].nvlink_domain = i == 0 ? 0 : i >= 6 ? 1 : 2;
  c.running = {make_running(1, 0, {1, 2, 3, 4, 5}, 100 * kSec, kNow - kSec)};
  Job head = make_job(2, 7);  // at +99 s: the 5 busy GPUs and 2 idle ones
  head.time_limit = 10 * kSec;
  Job quick = make_job(3, 1);
  quick.time_limit = 50 * kSec;
  Job slow = make_job(4, 1);  // 1 extra GPU at the shadow time
  slow.time_limit = 500 * kSec;
  const auto r = schedule(c, {head, quick, slow}, Usage{}, policy_of("backfill"), kNow);
  ASSERT_TRUE(r.reservation);
  ASSERT_EQ(r.reserved.size(), 1u);
  EXPECT_EQ(r.reserved[0].gpus, (std::vector<unsigned>{1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(r.starts.size(), 2u);
  EXPECT_EQ(r.starts[0].job, 3);
  EXPECT_EQ(r.starts[0].placement[0].gpus, (std::vector<unsigned>{6}));
  EXPECT_EQ(r.starts[1].job, 4);
  EXPECT_EQ(r.starts[1].placement[0].gpus, (std::vector<unsigned>{0}));
}

// One machine, random running jobs and queues: the starts are exactly those of the counting
// EASY reference, so the choice of GPUs never refuses a job that cannot delay the head.
TEST(BackfillProperty, OneMachineStartsWhatCountingEasyStarts) {
  int backfilled = 0;
  for (unsigned seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const unsigned total = 8;
    Cluster c = make_cluster(1, total);
    std::vector<unsigned> gpus(total);
    for (unsigned i = 0; i < total; ++i) gpus[i] = i;
    std::shuffle(gpus.begin(), gpus.end(), rng);
    std::vector<EasyRunning> ref_running;
    unsigned used = 0;
    for (JobId id = 100; used < total && pick(0, 4) > 0; ++id) {
      const auto g = static_cast<unsigned>(pick(1, static_cast<int>(total - used)));
      std::vector<unsigned> on(gpus.begin() + used, gpus.begin() + used + g);
      used += g;
      const DurationNs limit = pick(1, 20) * kMin;
      const TimeNs start = kNow - pick(0, 25) * kMin;  // some overdue: they count as ending now
      c.running.push_back(make_running(id, 0, on, limit, start));
      ref_running.push_back({g, start + limit});
    }
    std::vector<Job> jobs;
    std::vector<EasyJob> queue;
    const int n = pick(1, 10);
    for (JobId id = 1; id <= n; ++id) {
      Job j = make_job(id, static_cast<unsigned>(pick(1, total)));
      j.time_limit = pick(1, 30) * kMin;
      jobs.push_back(j);
      queue.push_back({id, j.gpus, j.time_limit});
    }
    std::shuffle(jobs.begin(), jobs.end(), rng);  // the pass orders them itself
    const auto r = schedule(c, jobs, Usage{}, policy_of("backfill"), kNow);
    std::vector<std::int64_t> got;
    for (const Start& s : r.starts) got.push_back(s.job);
    const std::vector<std::int64_t> want = easy_pass(total, ref_running, queue, kNow);
    ASSERT_EQ(got, want) << "seed " << seed;
    if (r.reservation) {
      for (std::int64_t id : got) backfilled += id > r.reservation->first ? 1 : 0;
    }
  }
  EXPECT_GT(backfilled, 200);
}

// ---- property test -----------------------------------------------------------------------

struct Use {
  int exclusive = 0;
  int shared = 0;
  std::uint64_t memory = 0;
};
using Uses = std::vector<std::vector<Use>>;

std::uint64_t cap_of(const Gpu& g) {
  return g.memory_bytes > g.memory_used_outside ? g.memory_bytes - g.memory_used_outside : 0;
}

void add(Uses& u, const Running& r, int sign) {
  for (const NodeGpus& ng : r.placement) {
    for (unsigned g : ng.gpus) {
      Use& x = u[ng.node][g];
      if (r.shared) {
        x.shared += sign;
        x.memory = sign > 0 ? x.memory + r.gpu_memory : x.memory - r.gpu_memory;
      } else {
        x.exclusive += sign;
      }
    }
  }
}

// Whether the job could be placed at all with this use: brute force over nodes.
bool fits(const Cluster& c, const Uses& u, const Job& j) {
  std::vector<unsigned> per_node;
  for (std::size_t n = 0; n < c.nodes.size(); ++n) {
    unsigned k = 0;
    for (std::size_t i = 0; i < c.nodes[n].gpus.size(); ++i) {
      const Gpu& g = c.nodes[n].gpus[i];
      const Use& x = u[n][i];
      if (g.health == GpuHealth::kFenced || g.busy_outside || x.exclusive > 0) continue;
      if (j.shared ? cap_of(g) >= x.memory + j.gpu_memory
                   : x.shared == 0 && cap_of(g) >= j.gpu_memory) {
        ++k;
      }
    }
    per_node.push_back(k);
  }
  std::sort(per_node.begin(), per_node.end(), std::greater<>());
  const unsigned max_k = std::min<unsigned>(std::max(1u, j.nodes), per_node.size());
  for (unsigned k = 1; k <= max_k; ++k) {
    const unsigned q = j.gpus / k;
    const unsigned r = j.gpus % k;
    if (q > 0 && per_node[k - 1] >= q && (r == 0 || per_node[r - 1] >= q + 1)) return true;
  }
  return false;
}

std::optional<TimeNs> earliest(const Cluster& c, const std::vector<Running>& runs, const Job& j) {
  Uses u(c.nodes.size());
  for (std::size_t n = 0; n < c.nodes.size(); ++n) u[n].resize(c.nodes[n].gpus.size());
  for (const Running& r : runs) add(u, r, +1);
  if (fits(c, u, j)) return kNow;
  std::vector<const Running*> ending;
  for (const Running& r : runs) {
    if (r.time_limit > 0) ending.push_back(&r);
  }
  std::stable_sort(ending.begin(), ending.end(), [](const Running* a, const Running* b) {
    return a->start_time + a->time_limit < b->start_time + b->time_limit;
  });
  for (std::size_t i = 0; i < ending.size();) {
    const TimeNs t = ending[i]->start_time + ending[i]->time_limit;
    for (; i < ending.size() && ending[i]->start_time + ending[i]->time_limit == t; ++i) {
      add(u, *ending[i], -1);
    }
    if (fits(c, u, j)) return std::max(t, kNow);
  }
  return std::nullopt;
}

Cluster random_cluster(std::mt19937& rng) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  Cluster c;
  JobId next = 1000;
  const int nodes = 1 + pick(4);
  for (int n = 0; n < nodes; ++n) {
    Node node = make_node("n" + std::to_string(n), 2 + pick(7), (pick(2) ? 24 : 80) * kGiB);
    for (Gpu& g : node.gpus) {
      g.nvlink_domain = pick(3) == 0 ? -1 : static_cast<int>(g.index / 4);
      if (pick(10) == 0) g.health = GpuHealth::kFenced;
      if (pick(10) == 0) g.health = GpuHealth::kDegraded;
      if (pick(15) == 0) g.busy_outside = true;
    }
    for (unsigned i = 0; i < node.gpus.size();) {
      const int roll = pick(10);
      const DurationNs limit = pick(5) == 0 ? 0 : (10 + pick(230)) * kMin;
      Running r =
          make_running(next++, static_cast<unsigned>(n), {}, limit, kNow - pick(300) * kMin);
      if (roll < 5) {  // exclusive, 1-3 GPUs
        const unsigned w = std::min<unsigned>(1 + pick(3), node.gpus.size() - i);
        for (unsigned k = 0; k < w; ++k) r.placement[0].gpus.push_back(i + k);
        i += w;
        c.running.push_back(r);
      } else if (roll < 7) {  // one or two shared jobs on one GPU
        const int jobs = 1 + pick(2);
        for (int k = 0; k < jobs; ++k) {
          r.id = next++;
          r.shared = true;
          r.gpu_memory = node.gpus[i].memory_bytes / 4;
          r.placement[0].gpus = {i};
          c.running.push_back(r);
        }
        ++i;
      } else {
        ++i;
      }
    }
    c.nodes.push_back(node);
  }
  return c;
}

std::vector<Job> random_jobs(std::mt19937& rng, unsigned max_gpus) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::vector<Job> jobs;
  const int n = 3 + pick(30);
  for (int i = 0; i < n; ++i) {
    Job j = make_job(i + 1, 1 + pick(static_cast<int>(max_gpus) + 1), kNow - pick(500) * kMin);
    j.user = "u" + std::to_string(pick(4));
    j.priority = pick(3);
    if (pick(5) == 0) j.nodes = 2 + pick(2);
    if (pick(6) == 0) {
      j.shared = true;
      j.gpus = 1;
      j.gpu_memory = (1 + pick(12)) * kGiB;
    } else if (pick(6) == 0) {
      j.gpu_memory = (pick(2) ? 20 : 60) * kGiB;
    }
    j.time_limit = pick(4) == 0 ? 0 : (5 + pick(300)) * kMin;
    j.held = pick(20) == 0;
    if (pick(15) == 0 && i > 0) j.after = {pick(i) + 1};
    jobs.push_back(j);
  }
  return jobs;
}

Running as_running(const Job& j, const Start& s) {
  Running r;
  r.id = j.id;
  r.placement = s.placement;
  r.shared = j.shared;
  r.gpu_memory = j.gpu_memory;
  r.start_time = kNow;
  r.time_limit = j.time_limit;
  return r;
}

void check_no_oversubscription(const Cluster& c, const std::vector<Job>& jobs,
                               const ScheduleResult& r, unsigned seed) {
  Uses u(c.nodes.size());
  for (std::size_t n = 0; n < c.nodes.size(); ++n) u[n].resize(c.nodes[n].gpus.size());
  for (const Running& run : c.running) add(u, run, +1);
  for (const Start& s : r.starts) {
    const Job& j =
        *std::find_if(jobs.begin(), jobs.end(), [&](const Job& x) { return x.id == s.job; });
    unsigned total = 0;
    for (const NodeGpus& ng : s.placement) {
      total += static_cast<unsigned>(ng.gpus.size());
      for (unsigned g : ng.gpus) {
        const Gpu& gpu = c.nodes[ng.node].gpus[g];
        ASSERT_NE(gpu.health, GpuHealth::kFenced) << "seed " << seed;
        ASSERT_FALSE(gpu.busy_outside) << "seed " << seed;
      }
    }
    ASSERT_EQ(total, j.gpus) << "seed " << seed;
    ASSERT_LE(s.placement.size(), std::max(1u, j.nodes)) << "seed " << seed;
    add(u, as_running(j, s), +1);
  }
  for (std::size_t n = 0; n < c.nodes.size(); ++n) {
    for (std::size_t i = 0; i < u[n].size(); ++i) {
      const Use& x = u[n][i];
      ASSERT_LE(x.exclusive, 1) << "seed " << seed << " node " << n << " gpu " << i;
      if (x.exclusive == 1) {
        ASSERT_EQ(x.shared, 0) << "seed " << seed;
      }
      if (x.shared > 0) {
        ASSERT_LE(x.memory, cap_of(c.nodes[n].gpus[i])) << "seed " << seed;
      }
    }
  }
}

TEST(BackfillProperty, NeverDelaysTheReservationNeverOversubscribes) {
  int reservations = 0;
  int backfilled = 0;
  for (unsigned seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    const Cluster c = random_cluster(rng);
    unsigned max_gpus = 0;
    for (const Node& n : c.nodes) max_gpus = std::max<unsigned>(max_gpus, n.gpus.size());
    const std::vector<Job> jobs = random_jobs(rng, max_gpus);
    static constexpr const char* kPolicies[] = {"backfill", "backfill:priority", "backfill:sjf"};
    PolicyConfig p = policy_of(kPolicies[seed % 3]);
    p.spread = seed % 4 == 0;
    const auto r = schedule(c, jobs, Usage{}, p, kNow);
    check_no_oversubscription(c, jobs, r, seed);
    if (HasFatalFailure()) return;
    if (!r.reservation) continue;
    ++reservations;

    const auto job_of = [&](JobId id) {
      return *std::find_if(jobs.begin(), jobs.end(), [&](const Job& x) { return x.id == id; });
    };
    const Job head = job_of(r.reservation->first);
    const auto pos = [&](JobId id) { return std::find(r.order.begin(), r.order.end(), id); };
    std::vector<Running> before = c.running;  // running + what started ahead of the head
    std::vector<Running> all = c.running;     // + the backfilled jobs
    for (const Start& s : r.starts) {
      const Job& j = job_of(s.job);
      all.push_back(as_running(j, s));
      if (pos(s.job) < pos(head.id)) {
        before.push_back(as_running(j, s));
        continue;
      }
      ++backfilled;
      // A backfilled job still running at the reservation keeps off the reserved GPUs.
      if (j.time_limit > 0 && kNow + j.time_limit <= r.reservation->second) continue;
      for (const NodeGpus& ng : s.placement) {
        for (const NodeGpus& res : r.reserved) {
          if (res.node != ng.node) continue;
          for (unsigned g : ng.gpus) {
            ASSERT_EQ(std::count(res.gpus.begin(), res.gpus.end(), g), 0)
                << "seed " << seed << ": job " << j.id << " on reserved GPU " << g;
          }
        }
      }
    }
    const auto planned = earliest(c, before, head);
    ASSERT_EQ(planned, r.reservation->second) << "seed " << seed;
    const auto with_backfill = earliest(c, all, head);
    ASSERT_TRUE(with_backfill) << "seed " << seed;
    ASSERT_LE(*with_backfill, r.reservation->second) << "seed " << seed;
  }
  // The random workloads must exercise what they test.
  EXPECT_GT(reservations, 100);
  EXPECT_GT(backfilled, 50);
}

TEST(StrictProperty, NeverOversubscribes) {
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const Cluster c = random_cluster(rng);
    const std::vector<Job> jobs = random_jobs(rng, 8);
    for (const char* p : {"fcfs", "priority", "fairshare", "sjf", "las"}) {
      check_no_oversubscription(c, jobs, schedule(c, jobs, Usage{}, policy_of(p), kNow), seed);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace cardiac::sched
