// SPDX-License-Identifier: Apache-2.0
// JobLifecycle as a table: every (from, to) pair of job states against a real store. The
// allowed pairs are listed here again, apart from the code's table, so a change to either
// shows; allowed changes must write what they should, refused ones must name both states and
// leave the job as it was.
#include "queue/job_lifecycle.h"

#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <tuple>
#include <utility>

#include "core/format.h"
#include "queue/job_store.h"
#include "queue/tests/support.h"
#include "store/schema.h"

namespace cardiac::queue {

// Failure messages name the states, not their bytes.
void PrintTo(JobState s, std::ostream* os) {
  *os << job_state_name(s);
}

namespace {

constexpr JobState kStates[] = {JobState::kPending,   JobState::kHeld,   JobState::kRunning,
                                JobState::kCompleted, JobState::kFailed, JobState::kTimeout,
                                JobState::kCancelled, JobState::kLost};

const std::set<std::pair<JobState, JobState>>& expected_allowed() {
  static const std::set<std::pair<JobState, JobState>> kAllowed = {
      {JobState::kPending, JobState::kHeld},      {JobState::kPending, JobState::kRunning},
      {JobState::kPending, JobState::kCancelled}, {JobState::kHeld, JobState::kPending},
      {JobState::kHeld, JobState::kCancelled},    {JobState::kRunning, JobState::kCompleted},
      {JobState::kRunning, JobState::kFailed},    {JobState::kRunning, JobState::kTimeout},
      {JobState::kRunning, JobState::kCancelled}, {JobState::kRunning, JobState::kLost},
      {JobState::kRunning, JobState::kPending},
  };
  return kAllowed;
}

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;
constexpr DurationNs kBackoff = 7 * kNsPerSec;

class JobLifecycleTable : public ::testing::TestWithParam<std::tuple<JobState, JobState>> {
 protected:
  void SetUp() override {
    auto db = store::open_store(dir_.file("cardiac.db"));
    ASSERT_TRUE(db) << db.error().what();
    db_.emplace(std::move(*db));
    LifecycleOptions o;
    o.retry_limit = 3;
    o.backoff = kBackoff;
    o.charge = [this](const Job& j, TimeNs end) { charged_.push_back({j.id, end}); };
    lifecycle_.emplace(*db_, clock_, std::move(o));
  }

  // A job in `state` as the queue leaves it there; a running one has attempt 1 open on GPU 2.
  Job seed(JobState state) {
    Job j;
    j.state = state;
    j.user = "alice";
    j.argv = {"true"};
    j.submit_ns = kT0 - 100 * kNsPerSec;
    j.reason = state == JobState::kHeld ? "held by alice" : "";
    if (is_terminal(state)) j.end_ns = kT0 - 50 * kNsPerSec;
    auto id = insert_job(*db_, j);
    EXPECT_TRUE(id) << id.error().what();
    j.id = *id;
    if (state == JobState::kRunning) {
      j.attempt = 1;
      j.start_ns = j.first_start_ns = kT0 - 60 * kNsPerSec;
      j.gpu_indices = {2};
      j.gpu_uuids = {"GPU-test-2"};
      j.runner_pid = 4242;
      EXPECT_TRUE(update_job(*db_, j));
      Attempt a;
      a.job = j.id;
      a.attempt = 1;
      a.start_ns = *j.start_ns;
      a.gpu_indices = j.gpu_indices;
      EXPECT_TRUE(insert_attempt(*db_, a));
    }
    return j;
  }

  Job stored(JobId id) {
    auto j = get_job(*db_, id);
    EXPECT_TRUE(j && *j);
    return **j;
  }

  testing::TempDir dir_;
  ManualClock clock_{kT0};
  std::optional<store::Db> db_;
  std::optional<JobLifecycle> lifecycle_;
  std::vector<std::pair<JobId, TimeNs>> charged_;
};

TEST_P(JobLifecycleTable, AllowedChangesWriteWhatTheyShouldOthersAreRefused) {
  const auto [from, to] = GetParam();
  Job j = seed(from);
  const Job before = j;
  Step step;
  step.reason = "the new reason";
  step.attempt_reason = "how the attempt ended";
  step.exit_code = 3;
  step.end_ns = kT0 - kNsPerSec;
  step.gpus = {0, 1};
  step.uuids = {"GPU-test-0", "GPU-test-1"};
  Status st = lifecycle_->apply(j, to, step);

  EXPECT_EQ(transition_allowed(from, to), expected_allowed().count({from, to}) == 1);
  if (!expected_allowed().count({from, to})) {
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().what().find(
                  fmt::format("from {} to {}", job_state_name(from), job_state_name(to))),
              std::string::npos)
        << st.error().what();
    EXPECT_EQ(j.state, from);
    EXPECT_EQ(j.reason, before.reason);
    EXPECT_EQ(stored(j.id).state, from);
    EXPECT_TRUE(charged_.empty());
    return;
  }
  ASSERT_TRUE(st) << st.error().what();
  const Job s = stored(j.id);
  EXPECT_EQ(s.state, to);
  EXPECT_EQ(j.state, to);
  EXPECT_EQ(s.reason, "the new reason");
  auto attempts = attempts_of(*db_, j.id);
  ASSERT_TRUE(attempts);

  if (to == JobState::kRunning) {
    EXPECT_EQ(s.attempt, 1u);
    EXPECT_EQ(s.start_ns, kT0);
    EXPECT_EQ(s.first_start_ns, kT0);
    EXPECT_EQ(s.gpu_indices, (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(s.gpu_uuids, step.uuids);
    EXPECT_FALSE(s.end_ns);
    EXPECT_FALSE(s.runner_pid);
    ASSERT_EQ(attempts->size(), 1u);
    EXPECT_EQ(attempts->front().start_ns, kT0);
    EXPECT_EQ(attempts->front().gpu_indices, (std::vector<unsigned>{0, 1}));
    EXPECT_FALSE(attempts->front().end_ns);
  } else if (from == JobState::kRunning) {
    // The attempt ends and is charged at the end the runner gave.
    ASSERT_EQ(charged_.size(), 1u);
    EXPECT_EQ(charged_.front(), std::make_pair(j.id, kT0 - kNsPerSec));
    ASSERT_EQ(attempts->size(), 1u);
    const Attempt& a = attempts->front();
    EXPECT_EQ(a.end_ns, kT0 - kNsPerSec);
    EXPECT_EQ(a.exit_code, 3);
    EXPECT_EQ(a.reason, "how the attempt ended");
    EXPECT_EQ(a.outcome, to == JobState::kPending ? "requeued" : job_state_name(to));
    EXPECT_EQ(s.stop_action, StopAction::kNone);
    EXPECT_EQ(s.attempt, 1u);
    if (to == JobState::kPending) {
      EXPECT_EQ(s.restarts, 1u);
      EXPECT_EQ(s.not_before_ns, kT0 + kBackoff);
      EXPECT_FALSE(s.end_ns);
      EXPECT_FALSE(s.exit_code);
    } else {
      EXPECT_EQ(s.restarts, 0u);
      EXPECT_EQ(s.end_ns, kT0 - kNsPerSec);
      EXPECT_EQ(s.exit_code, 3);
    }
  } else {
    EXPECT_TRUE(charged_.empty());
    EXPECT_TRUE(attempts->empty());
    if (to == JobState::kPending) {
      EXPECT_EQ(s.eligible_ns, kT0);  // age counts from the release
    }
    if (to == JobState::kCancelled) {
      EXPECT_EQ(s.end_ns, kT0);
    }
    if (to == JobState::kHeld) {
      EXPECT_FALSE(s.end_ns);
    }
  }
}

std::string pair_name(const ::testing::TestParamInfo<std::tuple<JobState, JobState>>& info) {
  return fmt::format("{}_to_{}", job_state_name(std::get<0>(info.param)),
                     job_state_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(EveryPair, JobLifecycleTable,
                         ::testing::Combine(::testing::ValuesIn(kStates),
                                            ::testing::ValuesIn(kStates)),
                         pair_name);

// What the named changes choose: the retry limit decides between requeued and ended.
class JobLifecycleTest : public JobLifecycleTable {};

TEST_F(JobLifecycleTest, AStoppedJobIsRequeuedUntilTheRetryLimitThenFails) {
  Job j = seed(JobState::kRunning);
  ExitRecord rec;
  rec.job = j.id;
  rec.attempt = 1;
  rec.stopped = true;
  rec.signal = 15;
  rec.ended_ns = kT0;
  for (unsigned i = 1; i <= 3; ++i) {
    ASSERT_TRUE(lifecycle_->request_stop(j, StopAction::kRequeue, "GPU 2 fenced: Xid 79"));
    ASSERT_TRUE(lifecycle_->settle(j, rec));
    EXPECT_EQ(j.state, JobState::kPending);
    EXPECT_EQ(j.reason, fmt::format("GPU 2 fenced: Xid 79; requeued ({} of 3)", i));
    EXPECT_EQ(j.not_before_ns, 0);  // expedited: no backoff
    ASSERT_TRUE(lifecycle_->start(j, {1}, {"GPU-test-1"}));
    rec.attempt = j.attempt;
  }
  ASSERT_TRUE(lifecycle_->request_stop(j, StopAction::kRequeue, "GPU 1 fenced: Xid 79"));
  ASSERT_TRUE(lifecycle_->settle(j, rec));
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_EQ(j.reason, "GPU 1 fenced: Xid 79; not requeued: retry limit of 3 reached");
  EXPECT_EQ(stored(j.id).state, JobState::kFailed);
}

TEST_F(JobLifecycleTest, AVanishedRunnerIsLostOnceRetriesAreSpentAndCancelledWhenAsked) {
  Job j = seed(JobState::kRunning);
  j.restarts = 3;
  ASSERT_TRUE(update_job(*db_, j));
  ASSERT_TRUE(lifecycle_->lose(j));
  EXPECT_EQ(j.state, JobState::kLost);
  EXPECT_EQ(j.end_ns, kT0);

  Job k = seed(JobState::kRunning);
  ASSERT_TRUE(lifecycle_->request_stop(k, StopAction::kCancel, "cancelled by alice"));
  ASSERT_TRUE(lifecycle_->lose(k));
  EXPECT_EQ(k.state, JobState::kCancelled);
  EXPECT_EQ(k.reason, "cancelled by alice");
  EXPECT_EQ(stored(k.id).stop_action, StopAction::kNone);
}

TEST_F(JobLifecycleTest, StoppingIsOnlyForRunningJobs) {
  Job j = seed(JobState::kPending);
  Status st = lifecycle_->request_stop(j, StopAction::kCancel, "cancelled by alice");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().what().find("pending"), std::string::npos) << st.error().what();
}

}  // namespace
}  // namespace cardiac::queue
