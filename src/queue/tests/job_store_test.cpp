// SPDX-License-Identifier: Apache-2.0
// The queue tables: jobs, attempts, fences and usage.
#include "queue/job_store.h"

#include <gtest/gtest.h>

#include "queue/tests/support.h"
#include "store/schema.h"

namespace cardiac::queue {
namespace {

using testing::TempDir;

store::Db open_db(const TempDir& dir) {
  auto db = store::open_store(dir.file("cardiac.db"));
  EXPECT_TRUE(db) << db.error().what();
  return std::move(*db);
}

Job sample_job(const std::string& user = "alice") {
  Job j;
  j.user = user;
  j.uid = 1001;
  j.gid = 1001;
  j.groups = {1001, 27};
  j.argv = {"python", "train.py", "--lr", "3e-4"};
  j.env = {{"PATH", "/usr/bin"}, {"HOME", "/home/alice"}};
  j.cwd = "/home/alice";
  j.gpus = 2;
  j.gpu_mem = 20ULL << 30;
  j.priority = -3;
  j.time_limit = 3600 * kNsPerSec;
  j.after = {1};
  j.submit_ns = 1000;
  return j;
}

TEST(JobStore, InsertGetAndUpdate) {
  TempDir dir;
  auto db = open_db(dir);
  auto id = insert_job(db, sample_job());
  ASSERT_TRUE(id) << id.error().what();
  auto id2 = insert_job(db, sample_job("bob"));
  ASSERT_TRUE(id2);
  EXPECT_EQ(*id2, *id + 1);
  auto got = get_job(db, *id);
  ASSERT_TRUE(got && *got);
  Job j = **got;
  EXPECT_EQ(j.user, "alice");
  EXPECT_EQ(j.argv, sample_job().argv);
  EXPECT_EQ(j.env.at("HOME"), "/home/alice");
  EXPECT_EQ(j.groups, (std::vector<gid_t>{1001, 27}));
  EXPECT_EQ(j.gpu_mem, 20ULL << 30);
  EXPECT_EQ(j.after, (std::vector<JobId>{1}));
  EXPECT_EQ(j.state, JobState::kPending);

  j.state = JobState::kRunning;
  j.start_ns = 2000;
  j.first_start_ns = 2000;
  j.gpu_indices = {3, 5};
  j.gpu_uuids = {"GPU-a", "GPU-b"};
  j.runner_pid = 4242;
  j.runner_start = 777;
  j.attempt = 1;
  j.stop_action = StopAction::kRequeue;
  ASSERT_TRUE(update_job(db, j));
  auto again = get_job(db, *id);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->state, JobState::kRunning);
  EXPECT_EQ((*again)->gpu_indices, (std::vector<unsigned>{3, 5}));
  EXPECT_EQ((*again)->runner_pid, 4242);
  EXPECT_EQ((*again)->runner_start, 777);
  EXPECT_EQ((*again)->stop_action, StopAction::kRequeue);

  auto running = jobs_in_states(db, {JobState::kRunning});
  ASSERT_TRUE(running);
  ASSERT_EQ(running->size(), 1u);
  auto counts = count_by_state(db);
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->at(JobState::kRunning), 1);
  EXPECT_EQ(counts->at(JobState::kPending), 1);
  EXPECT_EQ(counts->at(JobState::kLost), 0);

  Job missing = j;
  missing.id = 999;
  EXPECT_EQ(update_job(db, missing).error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(*get_job(db, 999));
}

TEST(JobStore, EndedJobsNewestFirst) {
  TempDir dir;
  auto db = open_db(dir);
  for (int i = 0; i < 3; ++i) {
    Job j = sample_job();
    j.id = *insert_job(db, j);
    j.state = i == 1 ? JobState::kFailed : JobState::kCompleted;
    j.end_ns = 100 * (i + 1);
    ASSERT_TRUE(update_job(db, j));
  }
  auto ended = jobs_ended_since(db, 150, 10);
  ASSERT_TRUE(ended);
  ASSERT_EQ(ended->size(), 2u);
  EXPECT_EQ((*ended)[0].end_ns, 300);
  EXPECT_EQ((*ended)[1].state, JobState::kFailed);
}

TEST(JobStore, AttemptsRecordEachStart) {
  TempDir dir;
  auto db = open_db(dir);
  JobId id = *insert_job(db, sample_job());
  Attempt a{id, 1, 10, std::nullopt, {0}, {"GPU-a"}, std::nullopt, std::nullopt, "", ""};
  ASSERT_TRUE(insert_attempt(db, a));
  a.end_ns = 20;
  a.signal = 15;
  a.outcome = "requeued";
  a.reason = "GPU 0 fenced";
  ASSERT_TRUE(finish_attempt(db, a));
  ASSERT_TRUE(insert_attempt(db, {id, 2, 30, std::nullopt, {1}, {"GPU-b"}, {}, {}, "", ""}));
  auto all = attempts_of(db, id);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].outcome, "requeued");
  EXPECT_EQ((*all)[0].signal, 15);
  EXPECT_EQ((*all)[1].gpu_uuids, (std::vector<std::string>{"GPU-b"}));
  EXPECT_FALSE((*all)[1].end_ns);
}

TEST(JobStore, FencesMatchByUuidThenIndex) {
  TempDir dir;
  auto db = open_db(dir);
  ASSERT_TRUE(add_fence(db, {0, 3, "GPU-c", "bad fan", "root", false, 5, {}, ""}));
  ASSERT_TRUE(add_fence(db, {0, 5, "", "lost", "cardiac", true, 6, {}, ""}));
  auto active = list_fences(db, false);
  ASSERT_TRUE(active);
  ASSERT_EQ(active->size(), 2u);
  // Index 3 now answers with another UUID: the fence follows its UUID, not the index.
  EXPECT_EQ(*clear_fences(db, 3, "GPU-other", "root", 10), 0);
  EXPECT_EQ(*clear_fences(db, 7, "GPU-c", "root", 10), 1);
  EXPECT_EQ(*clear_fences(db, 5, "GPU-e", "admin", 11), 1);  // no UUID recorded: by index
  EXPECT_TRUE(list_fences(db, false)->empty());
  auto all = list_fences(db, true);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].cleared_by, "admin");
  EXPECT_EQ((*all)[0].cleared_ns, 11);
}

TEST(JobStore, UsageRows) {
  TempDir dir;
  auto db = open_db(dir);
  ASSERT_TRUE(save_usage(db, "alice", {10.5, 20, 99}));
  ASSERT_TRUE(save_usage(db, "alice", {11.5, 21, 100}));
  auto rows = load_usage(db);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_DOUBLE_EQ(rows->at("alice").decayed, 11.5);
  EXPECT_DOUBLE_EQ(rows->at("alice").total_gpu_seconds, 21);
}

}  // namespace
}  // namespace cardiac::queue
