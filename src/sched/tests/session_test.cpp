// SPDX-License-Identifier: Apache-2.0
// Session against schedule(): the same starts, order and reservation as a pass over a cluster
// rebuilt from scratch, through random sequences of passes, ends and health changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/session.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;

TEST(Session, StartsBecomeRunningAndEndsFreeTheirGpus) {
  Session s(make_cluster(1, 8).nodes);
  std::vector<Job> pending = {make_job(1, 6), make_job(2, 4)};
  pending[0].time_limit = kHour;
  auto r = s.pass(pending, {}, policy_of("fcfs"), kNow);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].job, 1);
  ASSERT_EQ(s.cluster().running.size(), 1u);
  EXPECT_EQ(s.cluster().running[0].time_limit, kHour);
  EXPECT_EQ(s.cluster().running[0].start_time, kNow);
  EXPECT_TRUE(s.running(1));

  pending.erase(pending.begin());
  EXPECT_TRUE(s.pass(pending, {}, policy_of("fcfs"), kNow).starts.empty());
  s.end(1);
  EXPECT_FALSE(s.running(1));
  r = s.pass(pending, {}, policy_of("fcfs"), kNow + kMin);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].job, 2);
  s.end(99);  // unknown: nothing happens
  EXPECT_EQ(s.cluster().running.size(), 1u);
}

// Without start placements neither the starts nor their running jobs carry one: the running
// jobs are the last ones in the order of the starts, and running_gpus names the GPUs the
// placement would have listed (flat: nodes in order, then position).
TEST(Session, StartPlacementsOffNamesTheGpusByFlatIndex) {
  Session with(make_cluster(2, 4).nodes);
  Session without(make_cluster(2, 4).nodes);
  without.set_start_placements(false);
  const std::vector<Job> first = {make_job(1, 3)};
  const std::vector<Job> pending = {make_job(2, 2), make_job(3, 1), make_job(4, 4)};
  with.pass(first, {}, policy_of("fcfs"), kNow);
  without.pass(first, {}, policy_of("fcfs"), kNow);
  const ScheduleResult want = with.pass(pending, {}, policy_of("fcfs"), kNow);
  const ScheduleResult got = without.pass(pending, {}, policy_of("fcfs"), kNow);
  ASSERT_EQ(got.starts.size(), 2u);
  ASSERT_EQ(want.starts.size(), 2u);
  const std::vector<Running>& running = without.cluster().running;
  ASSERT_EQ(running.size(), 3u);
  for (std::size_t i = 0; i < got.starts.size(); ++i) {
    EXPECT_EQ(got.starts[i].job, want.starts[i].job);
    EXPECT_TRUE(got.starts[i].placement.empty());
    EXPECT_EQ(running[1 + i].id, want.starts[i].job);
    EXPECT_TRUE(running[1 + i].placement.empty());
    std::vector<unsigned> flat;
    for (const NodeGpus& ng : want.starts[i].placement) {
      for (unsigned g : ng.gpus) flat.push_back(ng.node * 4 + g);
    }
    std::vector<unsigned> gpus = without.running_gpus(1 + i);
    std::sort(gpus.begin(), gpus.end());
    EXPECT_EQ(gpus, flat);
  }
  // Ending a job frees its GPUs as with placements.
  without.end(want.starts[0].job);
  with.end(want.starts[0].job);
  EXPECT_EQ(without.pass({make_job(5, 2)}, {}, policy_of("fcfs"), kNow).starts.size(),
            with.pass({make_job(5, 2)}, {}, policy_of("fcfs"), kNow).starts.size());
}

TEST(Session, AnyJobIdRunsAndEnds) {
  Session s(make_cluster(1, 4).nodes);
  const JobId ids[] = {3, -7, JobId{1} << 40, (JobId{1} << 24) - 1, JobId{1} << 24};
  std::vector<Job> pending;
  for (JobId id : ids) pending.push_back(make_job(id, 1));
  EXPECT_EQ(s.pass(pending, {}, policy_of("fcfs"), kNow).starts.size(), 4u);
  const Cluster c = s.cluster();
  for (const Running& r : c.running) EXPECT_TRUE(s.running(r.id));
  for (const Running& r : c.running) {
    s.end(r.id);
    EXPECT_FALSE(s.running(r.id));
  }
  EXPECT_TRUE(s.cluster().running.empty());
  EXPECT_EQ(s.pass(pending, {}, policy_of("fcfs"), kNow).starts.size(), 4u);
}

TEST(Session, FencedGpusAreNotUsedUntilHealthyAgain) {
  Session s(make_cluster(1, 4).nodes);
  for (unsigned g = 0; g < 3; ++g) s.set_health(0, g, GpuHealth::kFenced);
  std::vector<Job> pending = {make_job(1, 2)};
  EXPECT_TRUE(s.pass(pending, {}, policy_of("fcfs"), kNow).starts.empty());
  s.set_health(0, 1, GpuHealth::kOk);
  auto r = s.pass(pending, {}, policy_of("fcfs"), kNow);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].placement[0].gpus, (std::vector<unsigned>{1, 3}));
}

TEST(Session, DegradedGpusAreUsedLast) {
  Session s(make_cluster(2, 2).nodes);
  s.set_health(0, 0, GpuHealth::kDegraded);
  std::vector<Job> pending = {make_job(1, 2)};
  auto r = s.pass(pending, {}, policy_of("fcfs"), kNow);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].placement[0].node, 1u);
}

// A session's count of healthy GPUs per node follows each fence and clear in place: multi-node
// jobs too large for the healthy GPUs get the same reason as on a rebuilt cluster, and start
// once enough GPUs are cleared.
TEST(Session, HealthyCountsFollowFencesAndClears) {
  std::mt19937_64 rng(3);
  Session s(make_cluster(5, 4).nodes);
  unsigned checked = 0;
  for (int step = 0; step < 300; ++step) {
    const auto n = static_cast<unsigned>(rng() % 5);
    const auto g = static_cast<unsigned>(rng() % 4);
    s.set_health(n, g, rng() % 2 == 0 ? GpuHealth::kFenced : GpuHealth::kOk);
    Job j = make_job(1, 1 + static_cast<unsigned>(rng() % 20));
    j.nodes = 2 + static_cast<unsigned>(rng() % 4);
    const Cluster copy = s.cluster();
    const bool fits = fits_healthy(copy, j).has_value();
    const ScheduleResult want = schedule(copy, {j}, {}, policy_of("fcfs"), kNow);
    // A pass on the session starts the job; a copy of it keeps the session unchanged.
    std::vector<Job> pending = {j};
    const ScheduleResult got = s.pass(pending, {}, policy_of("fcfs"), kNow);
    EXPECT_EQ(got.reasons, want.reasons) << "step " << step;
    EXPECT_EQ(got.starts.size(), want.starts.size()) << "step " << step;
    EXPECT_EQ(!got.starts.empty(), fits) << "step " << step;
    for (const Start& st : got.starts) s.end(st.job);
    checked += fits ? 0 : 1;
  }
  EXPECT_GT(checked, 20u);  // jobs too large for the healthy GPUs were seen
}

// The pending jobs in a given order, as a caller keeping its queue sorted hands them over, with
// the least request among them.
class InOrder final : public OrderedPending {
 public:
  InOrder(const std::vector<Job>& pending, const std::vector<JobId>& order) {
    for (JobId id : order) {
      for (const Job& j : pending) {
        if (j.id == id) jobs_.push_back(&j);
      }
    }
    least_.gpus = ~0u;
    least_.shared_memory = ~std::uint64_t{0};
    for (const Job& j : pending) {
      least_.gpus = std::min(least_.gpus, j.gpus);
      if (j.shared) least_.shared_memory = std::min(least_.shared_memory, j.gpu_memory);
    }
  }
  const Job* next() override { return at_ < jobs_.size() ? jobs_[at_++] : nullptr; }
  [[nodiscard]] bool contains(JobId id) const override {
    return std::any_of(jobs_.begin(), jobs_.end(), [&](const Job* j) { return j->id == id; });
  }
  [[nodiscard]] Least least() const override { return least_; }

 private:
  std::vector<const Job*> jobs_;
  std::size_t at_ = 0;
  Least least_{};
};

// Random workloads: every pass of the session equals schedule() on a copy of its cluster. With
// `models`, nodes get GPU models and jobs model lists. With `ordered`, the session reads the
// queue in schedule()'s order through pass_ordered, some jobs share GPUs, and every other seed
// asks for no reasons (so strict and backfill passes stop reading early). Returns the starts
// seen.
unsigned check_random_histories(bool models, bool ordered = false) {
  const char* policies[] = {"fcfs", "priority", "backfill", "backfill:priority", "sjf", "las"};
  const char* names[] = {"T4", "A10", "V100M32"};
  unsigned starts_seen = 0;
  for (unsigned seed = 0; seed < 60; ++seed) {
    std::mt19937_64 rng(seed);
    PolicyConfig policy = policy_of(policies[seed % std::size(policies)]);
    if (ordered) policy.explain = seed % 4 < 2;
    Cluster base = make_cluster(3 + static_cast<unsigned>(rng() % 4), 4 + 4 * (rng() % 2));
    if (models) {
      for (Node& n : base.nodes) n.model = names[rng() % 3];
    }
    Session s(base.nodes);
    std::vector<Job> pending;
    JobId next = 1;
    TimeNs now = kNow;
    for (int step = 0; step < 80; ++step) {
      now += static_cast<TimeNs>(rng() % 600) * kNsPerSec;
      const unsigned what = static_cast<unsigned>(rng() % 10);
      if (what < 5) {
        Job j = make_job(next++, 1 + static_cast<unsigned>(rng() % 6), now);
        j.user = "u" + std::to_string(rng() % 3);
        j.priority = static_cast<int>(rng() % 4);
        j.nodes = rng() % 4 == 0 ? 2 : 1;
        j.time_limit = static_cast<DurationNs>(1 + rng() % 8) * kHour;
        j.estimate = j.time_limit / 2;
        if (models) {
          for (auto m = rng() % 3; m > 0; --m) j.models.emplace_back(names[rng() % 3]);
        }
        if (ordered && rng() % 3 == 0) {
          j.shared = true;
          j.nodes = 1;
          j.gpus = 1 + static_cast<unsigned>(rng() % 2);
          j.gpu_memory = (10 + rng() % 60) * kGiB;
        }
        pending.push_back(j);
      } else if (what < 8 && !s.cluster().running.empty()) {
        s.end(s.cluster().running[rng() % s.cluster().running.size()].id);
      } else {
        const unsigned n = static_cast<unsigned>(rng() % s.cluster().nodes.size());
        const unsigned g = static_cast<unsigned>(rng() % s.cluster().nodes[n].gpus.size());
        const GpuHealth h[] = {GpuHealth::kOk, GpuHealth::kDegraded, GpuHealth::kFenced};
        s.set_health(n, g, h[rng() % 3]);
      }
      const Cluster copy = s.cluster();
      const ScheduleResult want = schedule(copy, pending, {}, policy, now);
      InOrder in_order(pending, want.order);
      const ScheduleResult got =
          ordered ? s.pass_ordered(in_order, policy, now) : s.pass(pending, {}, policy, now);
      if (!ordered || policy.explain) {
        EXPECT_EQ(got.order, want.order) << "seed " << seed << " step " << step;
      } else {  // the jobs it read: the front of the order
        EXPECT_TRUE(got.order.size() <= want.order.size() &&
                    std::equal(got.order.begin(), got.order.end(), want.order.begin()))
            << "seed " << seed << " step " << step;
      }
      EXPECT_EQ(got.blocker, want.blocker) << "seed " << seed << " step " << step;
      EXPECT_EQ(got.reservation, want.reservation) << "seed " << seed << " step " << step;
      EXPECT_EQ(got.reasons, want.reasons) << "seed " << seed << " step " << step;
      EXPECT_EQ(got.starts.size(), want.starts.size()) << "seed " << seed << " step " << step;
      if (got.starts.size() != want.starts.size()) return starts_seen;
      for (std::size_t i = 0; i < got.starts.size(); ++i) {
        EXPECT_EQ(got.starts[i].job, want.starts[i].job);
        EXPECT_EQ(got.starts[i].placement.size(), want.starts[i].placement.size());
        if (got.starts[i].placement.size() != want.starts[i].placement.size()) return starts_seen;
        for (std::size_t k = 0; k < got.starts[i].placement.size(); ++k) {
          EXPECT_EQ(got.starts[i].placement[k].node, want.starts[i].placement[k].node);
          EXPECT_EQ(got.starts[i].placement[k].gpus, want.starts[i].placement[k].gpus);
        }
      }
      if (::testing::Test::HasFailure()) return starts_seen;
      starts_seen += static_cast<unsigned>(got.starts.size());
      for (const Start& st : got.starts) {
        std::erase_if(pending, [&](const Job& j) { return j.id == st.job; });
      }
    }
  }
  return starts_seen;
}

TEST(SessionProperty, EqualsAFreshPassThroughRandomHistories) {
  EXPECT_GT(check_random_histories(false), 500u);  // exercised, not vacuously true
}

TEST(SessionProperty, EqualsAFreshPassWithGpuModels) {
  EXPECT_GT(check_random_histories(true), 300u);
}

TEST(SessionProperty, OrderedPassEqualsAFreshPass) {
  EXPECT_GT(check_random_histories(false, true), 500u);
  EXPECT_GT(check_random_histories(true, true), 300u);
}

}  // namespace
}  // namespace cardiac::sched
