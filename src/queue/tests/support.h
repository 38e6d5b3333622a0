// SPDX-License-Identifier: Apache-2.0
// The queue's test helpers: a temporary state directory, hand-made GPU reports, polling, and
// QueueFixture, the queue in-process with a machine view the test changes, the request
// helpers and real runners started from the cardiac binary.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/tests/temp_dir.h"
#include "health/report.h"
#include "queue/auth.h"
#include "queue/queue.h"

namespace cardiac::queue::testing {

using cardiac::testing::TempDir;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls `ready` every 10 ms until it holds or `seconds` pass: waits for an observable
// condition; the bound only keeps a broken test from hanging.
inline bool eventually(const std::function<bool()>& ready, double seconds = 20) {
  for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
    if (ready()) return true;
    usleep(10000);
  }
  return ready();
}

// `n` healthy 80 GiB GPUs with UUIDs GPU-test-<i> on buses 0000:<i+10>:00.0.
inline std::shared_ptr<health::StatusReport> make_report(unsigned n) {
  auto r = std::make_shared<health::StatusReport>();
  r->nvml.available = true;
  for (unsigned i = 0; i < n; ++i) {
    health::GpuStatus g;
    g.reading.index = i;
    g.reading.uuid = "GPU-test-" + std::to_string(i);
    g.reading.pci_bus_id = "0000:" + std::to_string(10 + i) + ":00.0";
    g.reading.memory_total = 80ULL << 30;
    g.reading.memory_used = 4ULL << 20;
    g.reading.utilization_gpu = 0;
    g.reading.processes_supported = true;
    r->gpus.push_back(g);
  }
  return r;
}

inline Principal self_principal() {
  return resolve_principal(getuid(), getgid(), getpid());
}

class QueueFixture : public ::testing::Test {
 protected:
  void SetUp() override { view_.report = make_report(4); }
  void TearDown() override {
    // Let every job script finish, then stop.
    std::ofstream(dir_.file("go")).flush();
    if (q_) {
      eventually([&] { return list(false).empty(); }, 10);
      q_->stop();
    }
  }

  // Starts the queue on `clock_` with a short backoff and grace.
  void start(config::QueueSettings s = {}) {
    s.backoff = 50 * kNsPerMs;
    s.grace = 500 * kNsPerMs;
    QueueOptions o;
    o.state_dir = dir_.file("state");
    o.executable = CARDIAC_BINARY;
    o.settings = s;
    o.tick = 50 * kNsPerMs;
    q_ = std::make_unique<Queue>(o, *clock_, [this] {
      std::lock_guard lock(mu_);
      return view_;
    });
    auto st = q_->start();
    ASSERT_TRUE(st) << st.error().what();
  }

  void set_view(const std::function<void(health::StatusReport&)>& change) {
    std::lock_guard lock(mu_);
    // As the agent does: once a sample has listed GPUs, they have been seen, whatever NVML
    // says later.
    if (view_.report->nvml.available && !view_.report->gpus.empty()) view_.gpus_seen = true;
    auto next = std::make_shared<health::StatusReport>(*view_.report);
    change(*next);
    view_.report = next;
  }

  nlohmann::json call(const nlohmann::json& req, const Principal& who = testing::self_principal()) {
    return q_->handle(who, req);
  }

  // A script that waits (bounded) for the file `go`, appending its job id to `order` first.
  std::vector<std::string> waiter() const {
    return {"sh", "-c",
            "echo $CARDIAC_JOB_ID >> " + dir_.file("order") + "; echo $CUDA_VISIBLE_DEVICES > " +
                dir_.file("cvd") + ".$CARDIAC_JOB_ID.$CARDIAC_JOB_ATTEMPT; i=0; while [ ! -e " +
                dir_.file("go") + " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"};
  }

  nlohmann::json submit_req(std::vector<std::string> argv, unsigned gpus = 1) const {
    SubmitRequest r;
    r.argv = std::move(argv);
    r.env = {{"PATH", "/usr/bin:/bin"}};
    r.cwd = dir_.path();
    r.gpus = gpus;
    return {{"op", "submit"}, {"job", to_json(r)}};
  }

  JobId submit(std::vector<std::string> argv, unsigned gpus = 1) {
    auto r = call(submit_req(std::move(argv), gpus));
    EXPECT_TRUE(r.value("ok", false)) << r.dump();
    return r.value("id", JobId{0});
  }

  nlohmann::json list(bool all) {
    auto r = call({{"op", "list"}, {"all", all}});
    return r.value("jobs", nlohmann::json::array());
  }

  nlohmann::json job(JobId id) {
    auto r = call({{"op", "why"}, {"id", id}});
    return r;
  }

  std::string state(JobId id) { return job(id)["job"].value("state", "?"); }

  bool reaches(JobId id, const std::string& want) {
    return eventually([&] { return state(id) == want; });
  }

  TempDir dir_;
  // The queue's clock; set before start(). The real one by default: the fixture drives real
  // runners, which stamp their ends on it, and a requeued job's backoff must pass while they
  // run. Tests that step time set a ManualClock.
  const Clock* clock_ = &SystemClock::instance();
  std::mutex mu_;
  MachineView view_;
  std::unique_ptr<Queue> q_;
};

}  // namespace cardiac::queue::testing
