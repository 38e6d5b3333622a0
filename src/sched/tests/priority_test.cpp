// SPDX-License-Identifier: Apache-2.0
// Tests for the multifactor priority (hand-computed factors) and the policy orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/sched.h"
#include "sched/tests/support.h"

namespace cardiac::sched {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): test builders

constexpr DurationNs kPriorityDay = 24 * kHour;

const PriorityBreakdown& breakdown(const ScheduleResult& r, JobId id) {
  for (const PriorityBreakdown& b : r.priorities) {
    if (b.job == id) return b;
  }
  ADD_FAILURE() << "no priority for job " << id;
  static const PriorityBreakdown kNone;
  return kNone;
}

// 8 GPUs, all busy, so nothing starts and every job keeps its place.
Cluster busy_cluster() {
  Cluster c = make_cluster(2, 4);
  c.running = {make_running(100, 0, {0, 1, 2, 3}), make_running(101, 1, {0, 1, 2, 3})};
  return c;
}

TEST(Multifactor, FactorsMatchHandComputation) {
  Job a = make_job(1, 2);
  a.submit_time = kNow - 7 * kPriorityDay / 2;  // half of max_age
  a.priority = 10;
  Job b = make_job(2, 4);
  b.user = "bob";
  b.submit_time = kNow - 10 * kPriorityDay;  // past max_age
  b.priority = 5;
  Usage usage;  // nobody has used anything: fair-share factor 1 for both
  const auto r = schedule(busy_cluster(), {a, b}, usage, policy_of("priority"), kNow);

  const PriorityBreakdown& pa = breakdown(r, 1);
  EXPECT_DOUBLE_EQ(pa.age_factor, 0.5);
  EXPECT_DOUBLE_EQ(pa.job_size_factor, 0.25);  // 2 of 8 GPUs
  EXPECT_DOUBLE_EQ(pa.qos_factor, 1.0);        // the largest priority pending
  EXPECT_DOUBLE_EQ(pa.fairshare_factor, 1.0);
  EXPECT_DOUBLE_EQ(pa.age, 500);
  EXPECT_DOUBLE_EQ(pa.job_size, 250);
  EXPECT_DOUBLE_EQ(pa.qos, 1000);
  EXPECT_DOUBLE_EQ(pa.fairshare, 5000);
  EXPECT_DOUBLE_EQ(pa.total, 6750);

  const PriorityBreakdown& pb = breakdown(r, 2);
  EXPECT_DOUBLE_EQ(pb.age_factor, 1.0);
  EXPECT_DOUBLE_EQ(pb.job_size_factor, 0.5);
  EXPECT_DOUBLE_EQ(pb.qos_factor, 0.5);
  EXPECT_DOUBLE_EQ(pb.total, 1000 + 500 + 500 + 5000);
  EXPECT_EQ(r.order, (std::vector<JobId>{2, 1}));
}

TEST(Multifactor, FavorSmallEligibleTimeAndNegativePriority) {
  Job a = make_job(1, 2);
  a.eligible_time = kNow - 7 * kPriorityDay / 4;  // age counts from here, not from submit
  a.submit_time = kNow - 6 * kPriorityDay;
  a.priority = -10;
  Job b = make_job(2, 4);
  b.priority = 10;
  PolicyConfig p = policy_of("priority");
  p.weights.favor_small = true;
  const auto r = schedule(busy_cluster(), {a, b}, Usage{}, p, kNow);
  EXPECT_DOUBLE_EQ(breakdown(r, 1).age_factor, 0.25);
  EXPECT_DOUBLE_EQ(breakdown(r, 1).job_size_factor, 0.75);  // (8 - 2) / 8
  EXPECT_DOUBLE_EQ(breakdown(r, 2).job_size_factor, 0.5);
  EXPECT_DOUBLE_EQ(breakdown(r, 1).qos_factor, 0.0);  // lowest, shifted to zero
  EXPECT_DOUBLE_EQ(breakdown(r, 2).qos_factor, 1.0);
}

TEST(Multifactor, FairShareMovesTheHeavyUserBack) {
  Job a = make_job(1, 1);  // alice, submitted first
  Job b = make_job(2, 1);
  b.user = "bob";
  Usage usage;
  usage.usage = {{"alice", 1000}, {"bob", 10}};
  const auto r = schedule(busy_cluster(), {a, b}, usage, policy_of("priority"), kNow);
  EXPECT_EQ(r.order, (std::vector<JobId>{2, 1}));
  EXPECT_DOUBLE_EQ(breakdown(r, 2).fairshare_factor, 1.0);
  EXPECT_DOUBLE_EQ(breakdown(r, 1).fairshare_factor, 0.5);
  // fcfs ignores it.
  EXPECT_EQ(schedule(busy_cluster(), {a, b}, usage, policy_of("fcfs"), kNow).order,
            (std::vector<JobId>{1, 2}));
}

TEST(Multifactor, TiesGoBySubmitTimeThenId) {
  Job a = make_job(5, 1);
  Job b = make_job(3, 1);
  Job c = make_job(4, 1);
  a.submit_time = b.submit_time = c.submit_time = kNow - kHour;
  c.submit_time -= 1;
  const auto r = schedule(busy_cluster(), {a, b, c}, Usage{}, policy_of("priority"), kNow);
  EXPECT_EQ(r.order, (std::vector<JobId>{4, 3, 5}));
}

TEST(Orders, FairshareClassicAndFairTree) {
  Job a = make_job(1, 1);
  Job b = make_job(2, 1);
  b.user = "bob";
  Job c = make_job(3, 1);
  c.user = "carol";
  Usage usage;
  usage.usage = {{"alice", 50}, {"bob", 100}, {"carol", 10}};
  PolicyConfig p = policy_of("fairshare");
  EXPECT_EQ(schedule(busy_cluster(), {a, b, c}, usage, p, kNow).order,
            (std::vector<JobId>{3, 1, 2}));
  p.fair_tree = false;
  EXPECT_EQ(schedule(busy_cluster(), {a, b, c}, usage, p, kNow).order,
            (std::vector<JobId>{3, 1, 2}));
}

TEST(Orders, SjfUsesEstimateThenTimeLimitThenNeither) {
  Job a = make_job(1, 1);  // neither: last
  Job b = make_job(2, 1);
  b.time_limit = 2 * kHour;
  Job c = make_job(3, 1);
  c.time_limit = 10 * kHour;
  c.estimate = kHour;  // the estimate wins over its limit
  const auto r = schedule(busy_cluster(), {a, b, c}, Usage{}, policy_of("sjf"), kNow);
  EXPECT_EQ(r.order, (std::vector<JobId>{3, 2, 1}));
}

TEST(Orders, LasServesTheLeastAttainedFirst) {
  Job a = make_job(1, 1);
  a.attained = 5 * kHour;
  Job b = make_job(2, 1);
  b.attained = kHour;
  Job c = make_job(3, 1);
  const auto r = schedule(busy_cluster(), {a, b, c}, Usage{}, policy_of("las"), kNow);
  EXPECT_EQ(r.order, (std::vector<JobId>{3, 2, 1}));
}

TEST(Orders, ExplainOffLeavesStartsAndOrderAlone) {
  Cluster c = make_cluster(1, 4);
  std::vector<Job> jobs = {make_job(1, 2), make_job(2, 2), make_job(3, 2)};
  PolicyConfig p = policy_of("priority");
  const auto with = schedule(c, jobs, Usage{}, p, kNow);
  p.explain = false;
  const auto without = schedule(c, jobs, Usage{}, p, kNow);
  EXPECT_EQ(with.order, without.order);
  ASSERT_EQ(with.starts.size(), 2u);
  ASSERT_EQ(without.starts.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(with.starts[i].job, without.starts[i].job);
    EXPECT_EQ(with.starts[i].placement[0].gpus, without.starts[i].placement[0].gpus);
  }
  EXPECT_EQ(with.priorities.size(), 3u);
  EXPECT_EQ(with.reasons.size(), 1u);
  EXPECT_TRUE(without.priorities.empty());
  EXPECT_TRUE(without.reasons.empty());
}

// The ranking sorts packed keys, with the id and index only on ties; it must give the
// comparison sort's order, ties included (equal keys, equal submit times, negative times).
TEST(Orders, RankingEqualsAComparisonSortWithTies) {
  const char* policies[] = {"fcfs", "priority", "fairshare", "sjf", "las"};
  for (unsigned seed = 0; seed < 30; ++seed) {
    std::mt19937_64 rng(seed);
    const PolicyConfig p = policy_of(policies[seed % std::size(policies)]);
    Usage usage;
    usage.updated_at = kNow;
    std::vector<Job> jobs;
    const std::size_t n = 40 + rng() % 3000;
    for (std::size_t i = 0; i < n; ++i) {
      Job j = make_job(static_cast<JobId>(rng() % 1'000'000'000), 1 + rng() % 8);
      j.submit_time = kNow - static_cast<TimeNs>(rng() % (seed % 3 == 0 ? 4 : 100'000)) * kMin;
      if (rng() % 3 == 0) j.submit_time = -j.submit_time;
      j.user = "u" + std::to_string(rng() % 7);
      j.priority = static_cast<int>(rng() % 3) - 1;
      j.estimate = static_cast<DurationNs>(rng() % 5) * kHour;
      j.attained = static_cast<DurationNs>(rng() % 4) * kHour;
      jobs.push_back(j);
      usage.usage[j.user] = static_cast<double>(rng() % 1000);
    }
    const ScheduleResult r = schedule(busy_cluster(), jobs, usage, p, kNow);
    ASSERT_EQ(r.priorities.size(), jobs.size());
    struct Ref {
      double key;
      TimeNs submit;
      JobId id;
      std::size_t idx;
    };
    std::vector<Ref> ref;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const PriorityBreakdown& b = breakdown(r, jobs[i].id);
      ref.push_back(Ref{order_key(p.order, jobs[i], b.total, b.fairshare_factor),
                        jobs[i].submit_time, jobs[i].id, i});
    }
    std::sort(ref.begin(), ref.end(), [](const Ref& a, const Ref& b) {
      if (a.key != b.key) return a.key > b.key;
      if (a.submit != b.submit) return a.submit < b.submit;
      if (a.id != b.id) return a.id < b.id;
      return a.idx < b.idx;
    });
    std::vector<JobId> want;
    for (const Ref& x : ref) want.push_back(x.id);
    EXPECT_EQ(r.order, want) << "seed " << seed;
  }
}

}  // namespace
}  // namespace cardiac::sched
