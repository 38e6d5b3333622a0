// SPDX-License-Identifier: Apache-2.0
// The queue's scheduling as a user sees it, in-process with real runners and a manual clock:
// EASY backfill starts what the counting reference starts; a job larger than the healthy GPUs
// is said at submit and in `why` and does not hold the FCFS queue; a job requeued because its
// GPU failed keeps its place; new work avoids GPUs with a firing critical alert.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "queue/tests/support.h"
#include "sched/tests/easy_reference.h"

namespace cardiac::queue {
namespace {

using testing::eventually;

class QueueSchedTest : public testing::QueueFixture {
 protected:
  void SetUp() override {
    QueueFixture::SetUp();
    clock_ = &manual_;
  }

  JobId submit_job(unsigned gpus, DurationNs limit, const std::string& go = "go") {
    auto req = submit_req(waits_for(go), gpus);
    req["job"]["time_limit_ns"] = limit;
    auto r = call(req);
    EXPECT_TRUE(r.value("ok", false)) << r.dump();
    return r.value("id", JobId{0});
  }

  // A job that waits (bounded) until the file `name`, or `go`, appears in the test directory.
  std::vector<std::string> waits_for(const std::string& name) const {
    return {"sh", "-c",
            "i=0; while [ ! -e " + dir_.file(name) + " ] && [ ! -e " + dir_.file("go") +
                " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"};
  }

  void set_nvml(bool available) {
    set_view([&](health::StatusReport& r) { r.nvml.available = available; });
  }

  // Outlives the queue, which the fixture stops in TearDown. Starts at the real time: the
  // runners are real processes that stamp their ends on the real clock.
  ManualClock manual_{SystemClock::instance().now()};
};

// Random running jobs (started one by one, minutes apart on the manual clock, some cancelled
// to leave idle GPUs anywhere) and a random
// queue submitted while no pass can run; the one pass that follows starts exactly the jobs
// counting EASY starts.
TEST_F(QueueSchedTest, BackfillStartsWhatCountingEasyStarts) {
  constexpr unsigned kGpus = 8;
  view_.report = testing::make_report(kGpus);
  config::QueueSettings s;
  s.policy = "backfill";
  start(s);
  int started = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<sched::testing::EasyRunning> running;
    std::vector<JobId> ids;
    std::vector<JobId> cancel_later;
    unsigned used = 0;
    const auto busy = static_cast<unsigned>(pick(1, static_cast<int>(kGpus)));
    while (used < busy) {
      const auto g = static_cast<unsigned>(pick(1, static_cast<int>(busy - used)));
      const DurationNs limit = pick(10, 40) * 60 * kNsPerSec;
      JobId id = submit_job(g, limit);
      ASSERT_TRUE(reaches(id, "running")) << job(id).dump();
      ids.push_back(id);
      used += g;
      // Some end early, leaving idle GPUs anywhere (the placement fills from GPU 0).
      if (pick(0, 2) == 0) {
        cancel_later.push_back(id);
      } else {
        running.push_back({g, manual_.now() + limit});
      }
      manual_.advance(pick(0, 3) * 60 * kNsPerSec);
    }
    if (!cancel_later.empty()) {
      call({{"op", "cancel"}, {"ids", cancel_later}});
      for (JobId id : cancel_later) ASSERT_TRUE(reaches(id, "cancelled"));
    }
    set_nvml(false);
    std::vector<sched::testing::EasyJob> queue;
    const int n = pick(2, 6);
    for (int i = 0; i < n; ++i) {
      const auto g = static_cast<unsigned>(pick(1, static_cast<int>(kGpus)));
      const DurationNs limit = pick(1, 60) * 60 * kNsPerSec;
      JobId id = submit_job(g, limit);
      queue.push_back({id, g, limit});
      ids.push_back(id);
    }
    set_nvml(true);
    q_->tick();
    const std::vector<std::int64_t> want =
        sched::testing::easy_pass(kGpus, running, queue, manual_.now());
    for (const auto& j : queue) {
      const bool starts = std::find(want.begin(), want.end(), j.id) != want.end();
      EXPECT_EQ(state(j.id), starts ? "running" : "pending")
          << "seed " << seed << ", job " << j.id << ": " << job(j.id).dump();
    }
    started += static_cast<int>(want.size());
    std::erase_if(ids, [&](JobId id) { return state(id) == "cancelled"; });
    auto cancelled = call({{"op", "cancel"}, {"ids", ids}});
    ASSERT_TRUE(cancelled.value("ok", false)) << cancelled.dump();
    ASSERT_TRUE(eventually([&] { return list(false).empty(); }));
  }
  EXPECT_GT(started, 0);
}

// The example as the live queue meets it: GPUs 0-1 idle (their job was cancelled),
// 2-3 busy until +200 s, 4-7 until +100 s. The 4-GPU head is reserved on 4-7 at +100 s; the
// 2-GPU job of 1000 s needs only the 2 GPUs extra then, so it starts now on 0-1.
TEST_F(QueueSchedTest, BackfillStartsAJobThatNeedsOnlyTheExtraGpus) {
  view_.report = testing::make_report(8);
  config::QueueSettings s;
  s.policy = "backfill";
  start(s);
  const JobId gone = submit_job(2, 1000 * kNsPerSec);
  ASSERT_TRUE(reaches(gone, "running"));
  const JobId two = submit_job(2, 200 * kNsPerSec);
  ASSERT_TRUE(reaches(two, "running"));
  const JobId four = submit_job(4, 100 * kNsPerSec);
  ASSERT_TRUE(reaches(four, "running"));
  EXPECT_EQ(job(four)["job"]["gpu_indices"], nlohmann::json({4, 5, 6, 7}));
  call({{"op", "cancel"}, {"ids", {gone}}});
  ASSERT_TRUE(reaches(gone, "cancelled"));
  manual_.advance(20 * kNsPerSec);
  set_nvml(false);
  const JobId head = submit_job(4, 50 * kNsPerSec);
  const JobId tail = submit_job(2, 1000 * kNsPerSec);
  set_nvml(true);
  q_->tick();
  EXPECT_EQ(state(head), "pending");
  EXPECT_EQ(state(tail), "running") << job(tail).dump();
  EXPECT_EQ(job(tail)["job"]["gpu_indices"], nlohmann::json({0, 1}));
}

// Under FCFS, 8 GPUs with one fenced: an 8-GPU job is queued with a warning and `why` says
// what is short; the jobs behind it run instead of waiting for the fence to be cleared.
TEST_F(QueueSchedTest, AJobLargerThanTheHealthyGpusIsSaidAndDoesNotBlockFcfs) {
  view_.report = testing::make_report(8);
  start();
  auto f = call({{"op", "fence"}, {"action", "add"}, {"gpu", "3"}, {"reason", "bad fan"}});
  ASSERT_TRUE(f.value("ok", false)) << f.dump();
  q_->tick();
  auto r = call(submit_req(waits_for("go"), 8));
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_NE(r.value("warning", "").find("needs 8 GPUs, 7 healthy"), std::string::npos) << r;
  const JobId big = r.value("id", JobId{0});
  const JobId small = submit_job(2, 0);
  ASSERT_TRUE(reaches(small, "running")) << job(small).dump();
  EXPECT_EQ(state(big), "pending");
  const std::string why = job(big)["explanation"].dump();
  EXPECT_NE(why.find("needs 8 GPUs, 7 healthy"), std::string::npos) << why;
  call({{"op", "cancel"}, {"ids", {big}}});
}

// Under FCFS, a job requeued because its GPU failed goes back ahead of a job submitted after
// it: when GPUs free up it starts first, with no backoff (the manual clock never moves).
TEST_F(QueueSchedTest, AJobRequeuedForAFailedGpuKeepsItsPlace) {
  view_.report = testing::make_report(4);
  start();
  const JobId a = submit_job(2, 0, "go.a");
  ASSERT_TRUE(reaches(a, "running"));
  const JobId c = submit_job(2, 0, "go.c");
  ASSERT_TRUE(reaches(c, "running"));
  const JobId b = submit_job(2, 0, "go.b");
  const unsigned bad = job(a)["job"]["gpu_indices"][0];
  set_view([&](health::StatusReport& rep) {
    rep.gpus[bad].reading.health = nvml::DeviceHealth::kLost;
    rep.gpus[bad].reading.health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  });
  ASSERT_TRUE(eventually([&] { return job(a)["job"].value("restarts", 0) == 1; })) << job(a);
  EXPECT_EQ(state(a), "pending");
  EXPECT_EQ(state(b), "pending");
  std::ofstream(dir_.file("go.c")).flush();
  ASSERT_TRUE(reaches(c, "completed"));
  ASSERT_TRUE(reaches(a, "running")) << job(a).dump() << job(b).dump();
  EXPECT_EQ(state(b), "pending");
}

// A critical alert firing on GPU 0 (not a fence): a 1-GPU job goes to GPU 1; a job that needs
// every free GPU still gets GPU 0.
TEST_F(QueueSchedTest, NewWorkAvoidsGpusWithACriticalAlertWhileOthersAreFree) {
  view_.report = testing::make_report(4);
  view_.critical_alerts = {{0, "gpu_temperature_critical: 95 C"}};
  start();
  const JobId one = submit_job(1, 0);
  ASSERT_TRUE(reaches(one, "running"));
  EXPECT_EQ(job(one)["job"]["gpu_indices"], nlohmann::json({1}));
  const JobId three = submit_job(3, 0);
  ASSERT_TRUE(reaches(three, "running"));
  EXPECT_EQ(job(three)["job"]["gpu_indices"], nlohmann::json({0, 2, 3}));
}

}  // namespace
}  // namespace cardiac::queue
