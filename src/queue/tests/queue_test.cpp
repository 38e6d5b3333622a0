// SPDX-License-Identifier: Apache-2.0
// The queue in-process on a hand-made machine view, with real runners: jobs start on free
// GPUs with their UUIDs, in FCFS order; impossible requests are refused; who may cancel;
// hold and release; a GPU turning lost fences it and requeues its job elsewhere; a vanished
// runner's job is requeued; a restart adopts running jobs and records the ones that ended.
#include "queue/queue.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "core/format.h"
#include "queue/job_store.h"
#include "queue/proc.h"
#include "queue/tests/support.h"
#include "store/access.h"
#include "store/schema.h"

namespace cardiac::queue {
namespace {

using testing::eventually;
using testing::make_report;
using testing::read_text;
using testing::TempDir;

class QueueTest : public testing::QueueFixture {};

TEST_F(QueueTest, RunsAJobOnFreeGpusWithTheirUuids) {
  start();
  JobId id = submit({"sh", "-c", "echo $CUDA_VISIBLE_DEVICES > " + dir_.file("cvd")}, 2);
  ASSERT_TRUE(reaches(id, "completed"));
  EXPECT_EQ(read_text(dir_.file("cvd")), "GPU-test-0,GPU-test-1\n");
  auto j = job(id)["job"];
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["gpu_indices"], nlohmann::json({0, 1}));
  auto m = q_->metrics();
  EXPECT_EQ(m.jobs_by_state.at("completed"), 1);
  EXPECT_EQ(std::accumulate(m.wait_counts.begin(), m.wait_counts.end(), 0ULL), 1u);
}

TEST_F(QueueTest, ImpossibleRequestsAreRefusedAndNothingIsQueued) {
  start();
  auto too_many = call(submit_req({"true"}, 5));
  EXPECT_FALSE(too_many["ok"].get<bool>());
  EXPECT_EQ(too_many["code"], "invalid");
  EXPECT_NE(too_many["error"].get<std::string>().find("5 GPUs"), std::string::npos) << too_many;
  auto req = submit_req({"true"});
  req["job"]["gpu_mem"] = 100LL << 30;
  auto too_big = call(req);
  EXPECT_FALSE(too_big["ok"].get<bool>()) << too_big;
  req = submit_req({"true"});
  req["job"]["after"] = {12345};
  EXPECT_NE(call(req)["error"].get<std::string>().find("no such job"), std::string::npos);
  req = submit_req({"true"});
  req["job"]["argv"] = nlohmann::json::array();
  EXPECT_NE(call(req)["error"].get<std::string>().find("no command"), std::string::npos);
  EXPECT_EQ(call({{"op", "frobnicate"}})["code"], "invalid");
  EXPECT_TRUE(list(true).empty());
}

TEST_F(QueueTest, FcfsOnOneGpu) {
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  start();
  std::vector<JobId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(submit(waiter()));
  ASSERT_TRUE(reaches(ids[0], "running"));
  EXPECT_EQ(state(ids[1]), "pending");
  EXPECT_FALSE(list(false)[1]["why"].get<std::string>().empty());
  // The running job's GPU, for cardiac_gpu_job_info{source="cardiac"}.
  EXPECT_EQ(q_->metrics().gpu_jobs, (std::map<unsigned, std::vector<JobId>>{{0, {ids[0]}}}));
  std::ofstream(dir_.file("go")).flush();
  ASSERT_TRUE(reaches(ids[3], "completed"));
  EXPECT_TRUE(q_->metrics().gpu_jobs.empty());
  EXPECT_EQ(read_text(dir_.file("order")),
            fmt::format("{}\n{}\n{}\n{}\n", ids[0], ids[1], ids[2], ids[3]));
}

// Start order of `ids` as the queue recorded it (first start times).
std::vector<JobId> start_order(const std::function<nlohmann::json(JobId)>& job_of,
                               const std::vector<JobId>& ids) {
  std::vector<std::pair<TimeNs, JobId>> starts;
  for (JobId id : ids) starts.emplace_back(job_of(id)["job"]["start_ns"].get<TimeNs>(), id);
  std::sort(starts.begin(), starts.end());
  std::vector<JobId> out;
  for (const auto& s : starts) out.push_back(s.second);
  return out;
}

TEST_F(QueueTest, PriorityPolicyStartsTheHigherPriorityFirst) {
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  config::QueueSettings s;
  s.policy = "priority";
  start(s);
  JobId blocker = submit(waiter());
  ASSERT_TRUE(reaches(blocker, "running"));
  auto low = submit_req({"true"});
  low["job"]["priority"] = 100;
  auto high = submit_req({"true"});
  high["job"]["priority"] = 500;
  JobId low_id = call(low)["id"];
  JobId high_id = call(high)["id"];  // submitted later, ranked higher
  std::ofstream(dir_.file("go")).flush();
  ASSERT_TRUE(reaches(low_id, "completed"));
  ASSERT_TRUE(reaches(high_id, "completed"));
  auto order = start_order([&](JobId id) { return job(id); }, {low_id, high_id});
  EXPECT_EQ(order, (std::vector<JobId>{high_id, low_id}));
}

TEST_F(QueueTest, FairSharePolicyFavoursTheUserWhoUsedLess) {
  if (geteuid() != 0) GTEST_SKIP() << "runs jobs as two other uids: needs root";
  Principal heavy = resolve_principal(4000011, 4000011, 1);
  Principal light = resolve_principal(4000012, 4000012, 1);
  {
    std::filesystem::create_directories(dir_.file("state"));
    auto db = store::open_store(dir_.file("state/cardiac.db"));
    ASSERT_TRUE(db);
    TimeNs now = clock_->now();
    ASSERT_TRUE(save_usage(*db, heavy.user, {1e6, 1e6, now}));
    ASSERT_TRUE(save_usage(*db, light.user, {10, 10, now}));
  }
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  config::QueueSettings s;
  s.policy = "fairshare";
  start(s);
  JobId blocker = submit(waiter());
  ASSERT_TRUE(reaches(blocker, "running"));
  auto req = submit_req({"true"});
  req["job"]["cwd"] = "/";
  JobId first = call(req, heavy)["id"];
  JobId second = call(req, light)["id"];
  std::ofstream(dir_.file("go")).flush();
  ASSERT_TRUE(reaches(first, "completed"));
  ASSERT_TRUE(reaches(second, "completed"));
  auto order = start_order([&](JobId id) { return job(id); }, {first, second});
  EXPECT_EQ(order, (std::vector<JobId>{second, first}));
  auto share = call({{"op", "share"}});
  ASSERT_TRUE(share["ok"].get<bool>()) << share;
  EXPECT_FALSE(share["rows"].empty());
}

TEST_F(QueueTest, OnlyTheOwnerOrAnAdminMayCancel) {
  start();
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  JobId running = submit(waiter());
  JobId pending = submit(waiter());
  ASSERT_TRUE(reaches(running, "running"));
  Principal other = resolve_principal(4000001, 4000001, 1);
  auto denied = call({{"op", "cancel"}, {"ids", {pending}}}, other);
  EXPECT_EQ(denied["code"], "permission") << denied;
  EXPECT_EQ(call({{"op", "hold"}, {"id", pending}}, other)["code"], "permission");
  EXPECT_EQ(state(pending), "pending");
  EXPECT_TRUE(call({{"op", "hold"}, {"id", pending}})["ok"].get<bool>());
  EXPECT_EQ(state(pending), "held");
  EXPECT_TRUE(call({{"op", "release"}, {"id", pending}})["ok"].get<bool>());
  auto both = call({{"op", "cancel"}, {"ids", {pending, running}}});
  ASSERT_TRUE(both["ok"].get<bool>()) << both;
  EXPECT_EQ(both["results"][0]["state"], "cancelled");
  EXPECT_EQ(both["results"][1]["state"], "cancelling");
  ASSERT_TRUE(reaches(running, "cancelled"));
  EXPECT_EQ(call({{"op", "cancel"}, {"ids", {running}}})["code"], "invalid");  // already ended
}

TEST_F(QueueTest, ALostGpuIsFencedAndItsJobRequeuedElsewhere) {
  set_view([](health::StatusReport& r) { r.gpus.resize(2); });
  start();
  JobId id = submit(waiter());
  ASSERT_TRUE(reaches(id, "running"));
  unsigned first = job(id)["job"]["gpu_indices"][0];
  set_view([&](health::StatusReport& r) {
    r.gpus[first].reading.health = nvml::DeviceHealth::kLost;
    r.gpus[first].reading.health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  });
  ASSERT_TRUE(eventually([&] { return job(id)["job"]["attempt"] == 2 && state(id) == "running"; }));
  unsigned second = job(id)["job"]["gpu_indices"][0];
  EXPECT_NE(first, second);
  auto fences = call({{"op", "fence"}, {"action", "list"}})["fences"];
  ASSERT_EQ(fences.size(), 1u);
  EXPECT_EQ(fences[0]["gpu"], first);
  EXPECT_TRUE(fences[0]["automatic"].get<bool>());
  auto attempts = job(id)["attempts"];
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0]["outcome"], "requeued");
  EXPECT_NE(attempts[0]["reason"].get<std::string>().find("GPU_IS_LOST"), std::string::npos);
  std::string cvd = dir_.file(fmt::format("cvd.{}.2", id));
  ASSERT_TRUE(eventually([&] { return !read_text(cvd).empty(); }));
  EXPECT_EQ(read_text(cvd), fmt::format("GPU-test-{}\n", second));
  // The requeue went through the runner, which stopped the job: not a lost runner.
  EXPECT_EQ(attempts[0]["signal"], SIGTERM);
}

// An idle queue reads nothing from the store on a new sample unless the sample has a critical
// finding: the fence must still come from the sample alone, with no request to wake the loop.
// The test reads the fences through a connection of its own, which wakes nothing.
TEST_F(QueueTest, AnIdleQueueFencesAGpuFromTheSampleAlone) {
  start();
  ASSERT_TRUE(q_->api_json().has_value());
  set_view([](health::StatusReport& r) {
    r.gpus[1].reading.health = nvml::DeviceHealth::kLost;
    r.gpus[1].reading.health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  });
  auto fences_seen = [&]() -> std::vector<Fence> {
    auto db = store::open_store_read_only(dir_.file("state") + "/cardiac.db");
    if (!db) return {};
    auto f = list_fences(*db, false);
    return f ? *f : std::vector<Fence>{};
  };
  ASSERT_TRUE(eventually([&] { return !fences_seen().empty(); }));
  auto fences = fences_seen();
  ASSERT_EQ(fences.size(), 1u);
  EXPECT_EQ(fences[0].gpu, 1u);
  EXPECT_TRUE(fences[0].automatic);
}

// What an idle queue shows follows each sample without a request: a process outside the queue
// on a GPU appears and goes with the samples that show it.
TEST_F(QueueTest, AnIdleQueueShowsEachSamplesBusyGpus) {
  start();
  auto busy = [&] {
    auto j = q_->api_json();
    return j ? (*j)["busy_outside"] : nlohmann::json::object();
  };
  ASSERT_TRUE(eventually([&] { return busy().empty(); }));
  set_view([](health::StatusReport& r) {
    nvml::GpuProcess p;
    p.pid = static_cast<std::uint32_t>(getpid());
    p.used_memory_bytes = 1ULL << 30;
    r.gpus[2].reading.processes.push_back(p);
  });
  ASSERT_TRUE(eventually([&] { return busy().contains("2"); })) << busy();
  EXPECT_NE(busy()["2"].get<std::string>().find(std::to_string(getpid())), std::string::npos);
  set_view([](health::StatusReport& r) { r.gpus[2].reading.processes.clear(); });
  ASSERT_TRUE(eventually([&] { return busy().empty(); })) << busy();
  EXPECT_EQ(q_->api_json().value()["blocked"], "");
  // NVML going away shows as the reason nothing can start.
  set_view([](health::StatusReport& r) {
    r.nvml.available = false;
    r.nvml.error = "driver gone";
  });
  ASSERT_TRUE(eventually(
      [&] { return q_->api_json().value()["blocked"] == "NVML is not usable: driver gone"; }));
}

TEST_F(QueueTest, AVanishedRunnersJobIsRequeued) {
  start();
  JobId id = submit(waiter());
  ASSERT_TRUE(reaches(id, "running"));
  auto first = job(id)["job"];
  pid_t runner = first["runner_pid"];
  // The runner and its job die without a word, as on a crash.
  auto st = read_proc_stat(runner);
  ASSERT_TRUE(st);
  signal_session(runner, st->start_ticks, SIGKILL);
  ASSERT_TRUE(eventually([&] { return job(id)["job"]["attempt"] == 2; }));
  auto attempts = job(id)["attempts"];
  EXPECT_EQ(attempts[0]["outcome"], "requeued");
  EXPECT_NE(attempts[0]["reason"].get<std::string>().find("vanished"), std::string::npos);
}

TEST_F(QueueTest, ARestartAdoptsRunningJobsAndRecordsEndedOnes) {
  start();
  JobId keeps = submit(waiter());
  JobId ends =
      submit({"sh", "-c", "while [ ! -e " + dir_.file("end") + " ]; do sleep 0.05; done; exit 4"});
  JobId queued = submit({"true"}, 4);
  ASSERT_TRUE(reaches(keeps, "running"));
  ASSERT_TRUE(reaches(ends, "running"));
  pid_t runner = job(keeps)["job"]["runner_pid"];
  q_->stop();
  q_.reset();
  std::ofstream(dir_.file("end")).flush();
  // While no queue watches, the job ends and its runner records it.
  ASSERT_TRUE(eventually([&] {
    return std::filesystem::exists(dir_.file("state/jobs/" + std::to_string(ends) + ".exit"));
  }));
  start();
  ASSERT_TRUE(reaches(ends, "failed"));
  EXPECT_EQ(job(ends)["job"]["exit_code"], 4);
  EXPECT_EQ(state(keeps), "running");
  EXPECT_EQ(job(keeps)["job"]["runner_pid"], runner);
  std::ofstream(dir_.file("go")).flush();
  ASSERT_TRUE(reaches(keeps, "completed"));
  ASSERT_TRUE(reaches(queued, "completed"));
}

}  // namespace
}  // namespace cardiac::queue
