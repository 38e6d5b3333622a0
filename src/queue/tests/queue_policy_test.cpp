// SPDX-License-Identifier: Apache-2.0
// The queue in-process with real runners: time limits end jobs `timeout` (SIGKILL after the
// grace for a job that ignores SIGTERM); Fair Tree over configured accounts decides which job
// starts first; `--account` must be one of the user's; the age factor counts from when a job
// became eligible (released from hold, dependencies met), seen in the priority breakdown.
#include <gtest/gtest.h>

#include <signal.h>

#include <cmath>
#include <filesystem>

#include "core/format.h"
#include "queue/cluster_view.h"
#include "queue/job_store.h"
#include "queue/tests/support.h"
#include "store/schema.h"

namespace cardiac::queue {
namespace {

using testing::eventually;
using testing::read_text;

class QueuePolicyTest : public testing::QueueFixture {
 protected:
  // A job that waits (bounded) until the file `name`, or `go` (the fixture's tear-down),
  // appears in the test directory.
  std::vector<std::string> waits_for(const std::string& name) const {
    return {"sh", "-c",
            "i=0; while [ ! -e " + dir_.file(name) + " ] && [ ! -e " + dir_.file("go") +
                " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"};
  }

  // Outlives the queue, which the fixture stops in TearDown. Starts at the real time: the
  // runners are real processes that stamp their ends on the real clock.
  ManualClock manual_{SystemClock::instance().now()};

  JobId submit_with(std::vector<std::string> argv, const std::function<void(nlohmann::json&)>& set,
                    const Principal& who = testing::self_principal()) {
    auto req = submit_req(std::move(argv));
    set(req["job"]);
    auto r = call(req, who);
    EXPECT_TRUE(r.value("ok", false)) << r.dump();
    return r.value("id", JobId{0});
  }
};

TEST_F(QueuePolicyTest, AJobPastItsTimeLimitEndsTimeout) {
  start();
  JobId id = submit_with(waits_for("never"),
                         [](nlohmann::json& j) { j["time_limit_ns"] = 300 * kNsPerMs; });
  ASSERT_TRUE(reaches(id, "timeout")) << job(id).dump();
  auto w = job(id);
  EXPECT_NE(w["job"]["reason"].get<std::string>().find("time limit"), std::string::npos) << w;
  EXPECT_EQ(w["job"]["signal"], SIGTERM);
  ASSERT_EQ(w["attempts"].size(), 1u);
  EXPECT_EQ(w["attempts"][0]["outcome"], "timeout");
  auto m = q_->metrics();
  EXPECT_EQ(m.jobs_by_state.at("timeout"), 1);
}

TEST_F(QueuePolicyTest, ATimedOutJobThatIgnoresSigtermIsKilledAfterTheGrace) {
  start();
  std::string ready = dir_.file("ready");
  // The trap is set before `ready` appears; its children inherit the ignored SIGTERM.
  JobId id =
      submit_with({"sh", "-c", "trap '' TERM; touch " + ready + "; while :; do sleep 0.05; done"},
                  [](nlohmann::json& j) { j["time_limit_ns"] = 2 * kNsPerSec; });
  ASSERT_TRUE(reaches(id, "timeout")) << job(id).dump();
  EXPECT_TRUE(std::filesystem::exists(ready));
  EXPECT_EQ(job(id)["job"]["signal"], SIGKILL);
  auto err = read_text(dir_.file("state/jobs/" + std::to_string(id) + ".err"));
  EXPECT_NE(err.find("time limit"), std::string::npos) << err;
}

// Accounts research (9 shares) and ops (1): research's users used 50 GPU-s, ops' 20, so at
// the root research's S/U is higher and every research association outranks every ops one.
// The test's own user is in both (ops first, so its usage is charged there).
config::QueueSettings two_accounts(const std::string& self) {
  config::QueueSettings s;
  s.policy = "fairshare";
  s.accounts = {{"research", "", 9, ""}, {"ops", "", 1, ""}};
  s.users = {{self, "ops", 1, ""},
             {self, "research", 1, ""},
             {"cq-rx", "research", 1, ""},
             {"cq-ox", "ops", 1, ""}};
  return s;
}

TEST_F(QueuePolicyTest, FairTreeOrderAcrossAccountsDecidesWhichJobStartsFirst) {
  const Principal self = testing::self_principal();
  {
    std::filesystem::create_directories(dir_.file("state"));
    auto db = store::open_store(dir_.file("state/cardiac.db"));
    ASSERT_TRUE(db);
    TimeNs now = clock_->now();
    ASSERT_TRUE(save_usage(*db, "cq-rx", {50, 50, now}));
    ASSERT_TRUE(save_usage(*db, "cq-ox", {20, 20, now}));
  }
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  start(two_accounts(self.user));
  JobId blocker = submit(waits_for("go.blocker"));
  ASSERT_TRUE(reaches(blocker, "running"));
  // Submitted first, in the account that ranks lower; FCFS or a flat tree would start it first.
  JobId ops = submit_with(waits_for("go.ops"), [](nlohmann::json& j) { j["account"] = "ops"; });
  JobId research =
      submit_with(waits_for("go.research"), [](nlohmann::json& j) { j["account"] = "research"; });
  EXPECT_EQ(job(ops)["job"]["account"], "ops");
  EXPECT_EQ(job(research)["job"]["account"], "research");
  EXPECT_EQ(job(blocker)["job"]["account"], "ops");  // the user's first listed account
  std::ofstream(dir_.file("go.blocker")).flush();
  ASSERT_TRUE(reaches(research, "running"));
  EXPECT_EQ(state(ops), "pending");

  auto share = call({{"op", "share"}});
  ASSERT_TRUE(share["ok"].get<bool>()) << share;
  std::map<std::string, nlohmann::json> accounts;
  for (const auto& r : share["rows"]) {
    if (r["user"] == "") accounts[r["account"].get<std::string>()] = r;
  }
  ASSERT_TRUE(accounts.count("research") && accounts.count("ops")) << share;
  EXPECT_EQ(accounts["research"]["depth"], 0);
  EXPECT_DOUBLE_EQ(accounts["research"]["norm_shares"].get<double>(), 0.9);
  EXPECT_GT(accounts["research"]["level_fs"].get<double>(),
            accounts["ops"]["level_fs"].get<double>());
}

TEST_F(QueuePolicyTest, AnAccountMustBeOneOfTheUsers) {
  const Principal self = testing::self_principal();
  auto s = two_accounts(self.user);
  s.users = {{self.user, "ops", 1, ""}};
  start(s);
  auto ask = [&](const std::string& account) {
    auto req = submit_req({"true"});
    req["job"]["account"] = account;
    return call(req);
  };
  auto other = ask("research");
  EXPECT_EQ(other["code"], "invalid") << other;
  EXPECT_EQ(other["error"], fmt::format("--account research: {} is not in account 'research'; "
                                        "{}'s accounts: ops",
                                        self.user, self.user));
  auto none = ask("nope");
  EXPECT_NE(none["error"].get<std::string>().find("there is no account 'nope'"), std::string::npos)
      << none;
  EXPECT_TRUE(ask("ops")["ok"].get<bool>());
  ASSERT_TRUE(eventually([&] { return list(false).empty(); }));
  EXPECT_EQ(list(true).size(), 1u);
}

TEST_F(QueuePolicyTest, NoAccountsConfiguredMeansNoAccountOption) {
  start();
  auto req = submit_req({"true"});
  req["job"]["account"] = "physics";
  auto r = call(req);
  EXPECT_EQ(r["code"], "invalid");
  EXPECT_NE(r["error"].get<std::string>().find("no fair-share accounts are configured"),
            std::string::npos)
      << r;
  EXPECT_TRUE(list(true).empty());
}

// Age only: weight 1000 over max_age 1000 s, so a job eligible for N seconds has age N.
TEST_F(QueuePolicyTest, AgeCountsFromReleaseAndFromTheDependencyMet) {
  ManualClock& clock = manual_;
  clock_ = &clock;
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  config::QueueSettings s;
  s.policy = "priority";
  s.weights = {1000, 0, 0, 0};
  s.max_age = 1000 * kNsPerSec;
  s.priority_calc_period = 0;  // the ages as of every pass
  start(s);
  JobId first = submit(waits_for("go.first"));
  ASSERT_TRUE(reaches(first, "running"));
  JobId plain = submit(waits_for("go.plain"));
  JobId held = submit({"true"});
  ASSERT_TRUE(call({{"op", "hold"}, {"id", held}})["ok"].get<bool>());
  JobId dep = submit_with({"true"}, [&](nlohmann::json& j) { j["after"] = {first}; });
  clock.advance(100 * kNsPerSec);
  ASSERT_TRUE(call({{"op", "release"}, {"id", held}})["ok"].get<bool>());
  clock.advance(100 * kNsPerSec);

  // The weighted age term of a pending job's priority; -1 before a pass has ranked it.
  auto age = [&](JobId id) {
    auto w = job(id);
    return w.contains("priority") ? w["priority"].value("age", -1.0) : -1.0;
  };
  // Submitted 200 s ago; released 100 s ago; its dependency still runs: no age yet.
  ASSERT_TRUE(eventually([&] { return std::abs(age(plain) - 200) < 1e-6; })) << job(plain);
  EXPECT_NEAR(age(held), 100, 1e-6) << job(held);
  EXPECT_NEAR(age(dep), 0, 1e-6) << job(dep);
  EXPECT_TRUE(job(dep)["job"]["eligible"].is_null());

  // The dependency completes (the runner records its end in real time, before this clock's
  // now); `plain`, the oldest, takes the GPU and `dep` ages from that end.
  std::ofstream(dir_.file("go.first")).flush();
  ASSERT_TRUE(reaches(first, "completed"));
  ASSERT_TRUE(reaches(plain, "running"));
  TimeNs ended = job(first)["job"]["end_ns"].get<TimeNs>();
  double expected = static_cast<double>(clock.now() - ended) / 1e9;
  ASSERT_TRUE(eventually([&] { return std::abs(age(dep) - expected) < 1e-6; }))
      << job(dep) << " expected age " << expected;
  EXPECT_FALSE(job(dep)["job"]["eligible"].is_null());
  EXPECT_NEAR(age(held), 100, 1e-6);
  std::ofstream(dir_.file("go.plain")).flush();
}

// With priority_calc_period the factors shown and ordered by (here the age alone) are the last
// recomputation's until the period is over; a job submitted in between is placed as of then.
TEST_F(QueuePolicyTest, PriorityFactorsAreRecomputedOnlyOncePerPeriod) {
  ManualClock& clock = manual_;
  clock_ = &clock;
  set_view([](health::StatusReport& r) { r.gpus.resize(1); });
  config::QueueSettings s;
  s.policy = "priority";
  s.weights = {1000, 0, 0, 0};
  s.max_age = 1000 * kNsPerSec;
  s.priority_calc_period = 300 * kNsPerSec;
  start(s);
  JobId first = submit(waits_for("go.first"));
  ASSERT_TRUE(reaches(first, "running"));
  JobId waiting = submit(waits_for("go.waiting"));
  auto age = [&](JobId id) {
    auto w = job(id);
    return w.contains("priority") ? w["priority"].value("age", -1.0) : -1.0;
  };
  ASSERT_TRUE(eventually([&] { return age(waiting) >= 0; })) << job(waiting);
  EXPECT_NEAR(age(waiting), 0, 1e-6);

  // 200 s on: the pass that places `probe` keeps `waiting` as last computed.
  clock.advance(200 * kNsPerSec);
  JobId probe = submit(waits_for("go.probe"));
  ASSERT_TRUE(eventually([&] { return age(probe) >= 0; })) << job(probe);
  EXPECT_NEAR(age(probe), 0, 1e-6);
  EXPECT_NEAR(age(waiting), 0, 1e-6) << job(waiting);

  // The period is over: both are recomputed.
  clock.advance(100 * kNsPerSec);
  ASSERT_TRUE(eventually([&] { return std::abs(age(waiting) - 300) < 1e-6; })) << job(waiting);
  EXPECT_NEAR(age(probe), 100, 1e-6) << job(probe);
  std::ofstream(dir_.file("go")).flush();
}

// [queue] auto_unfence on the queue's clock: a GPU fenced because NVML stopped answering comes
// back once it answers again with nothing pending and NVML's recovery action NONE, for
// auto_unfence_after in a row; a row remap waiting for a reset, a recovery action NVML does not
// report or one asking for a reset keep it fenced, and so does an Xid whose remedy is the hardware
// (48, double-bit ECC) on another GPU.
TEST_F(QueuePolicyTest, AutoUnfenceReturnsARecoveredGpuButNeverAnRmaClassXid) {
  clock_ = &manual_;
  config::QueueSettings s;
  s.auto_unfence_after = 10 * 60 * kNsPerSec;
  start(s);
  set_view([](health::StatusReport& r) {
    r.gpus[1].reading.health = nvml::DeviceHealth::kUnresponsive;
    r.gpus[1].reading.health_detail = "NVML call timed out";
  });
  {
    std::lock_guard lock(mu_);
    view_.xid_counts[{"0000:12:00.0", 48}] = 1;  // GPU 2
  }
  q_->tick();
  auto active = [&] { return call({{"op", "fence"}, {"action", "list"}})["fences"]; };
  ASSERT_EQ(active().size(), 2u) << active().dump();
  // Answering again, but a row remap waits for a reset: kept.
  set_view([](health::StatusReport& r) {
    r.gpus[1].reading.health = nvml::DeviceHealth::kOk;
    r.gpus[1].reading.remapped_rows_pending = true;
  });
  q_->tick();
  manual_.advance(11 * 60 * kNsPerSec);
  q_->tick();
  EXPECT_EQ(active().size(), 2u);
  // Nothing pending, but NVML does not say its recovery action (a driver before 550): kept.
  set_view([](health::StatusReport& r) { r.gpus[1].reading.remapped_rows_pending = false; });
  q_->tick();
  manual_.advance(11 * 60 * kNsPerSec);
  q_->tick();
  EXPECT_EQ(active().size(), 2u);
  // The recovery action asks for a GPU reset: kept.
  set_view([](health::StatusReport& r) { r.gpus[1].reading.recovery_action = 1U; });
  q_->tick();
  manual_.advance(11 * 60 * kNsPerSec);
  q_->tick();
  EXPECT_EQ(active().size(), 2u);
  // Recovery action NONE: the probe passes from now on, and the fence goes after 10 minutes.
  set_view([](health::StatusReport& r) { r.gpus[1].reading.recovery_action = 0U; });
  q_->tick();
  manual_.advance(9 * 60 * kNsPerSec);
  q_->tick();
  EXPECT_EQ(active().size(), 2u);
  manual_.advance(2 * 60 * kNsPerSec);
  q_->tick();
  auto left = active();
  ASSERT_EQ(left.size(), 1u) << left.dump();
  EXPECT_EQ(left[0]["gpu"], 2);
  EXPECT_NE(left[0]["reason"].get<std::string>().find("Xid 48"), std::string::npos);
  auto all = call({{"op", "fence"}, {"action", "list"}, {"all", true}})["fences"];
  bool cleared = false;
  for (const auto& f : all) {
    if (f["gpu"] == 1 && f["cleared_by"] == kAutoUnfenceWho) cleared = true;
  }
  EXPECT_TRUE(cleared) << all.dump();
  // Days later the Xid 48 GPU is still fenced.
  manual_.advance(3 * 24 * 3600 * kNsPerSec);
  q_->tick();
  EXPECT_EQ(active().size(), 1u);
}

TEST(AutoUnfence, TheCatalogDecidesWhichFencesMayLift) {
  EXPECT_TRUE(fence_may_lift("GPU unresponsive: NVML call timed out"));
  EXPECT_TRUE(fence_may_lift("GPU error: NVML_ERROR_UNKNOWN"));
  EXPECT_FALSE(fence_may_lift("GPU lost: GPU_IS_LOST"));
  EXPECT_FALSE(fence_may_lift("GPU reset_required: NVML"));
  EXPECT_FALSE(fence_may_lift("Xid 79 on 0000:3b:00.0"));  // reboot
  EXPECT_FALSE(fence_may_lift("Xid 48 on 0000:3b:00.0"));  // the hardware
  EXPECT_FALSE(fence_may_lift("2 uncorrectable (double-bit) ECC errors since the last reset"));
  EXPECT_FALSE(fence_may_lift("row remapping failed"));
  EXPECT_FALSE(fence_may_lift("Xid"));
  EXPECT_FALSE(fence_may_lift("Xid 4x on"));
}

}  // namespace
}  // namespace cardiac::queue
