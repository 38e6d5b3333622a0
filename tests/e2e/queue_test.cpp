// SPDX-License-Identifier: Apache-2.0
// The job queue end to end: `cardiac agent` on the fake NVML with 8 GPUs, and real jobs (shell
// scripts that record CUDA_VISIBLE_DEVICES and wait for a file) submitted by two Unix users the
// test creates. Exclusive GPU sets are disjoint, FCFS order holds, user B cannot cancel A's job,
// a GPU lost mid-job is fenced and the job requeued onto a healthy GPU, an agent kill -9 and
// restart loses nothing, bad requests queue nothing, the queue metrics count what runs, the
// priority and fairshare policies order jobs, and the agent takes its state directory from
// CARDIAC_STATE_DIR. Needs root (to create the users and run jobs as them); CI runs as root,
// elsewhere those tests skip (the state-directory test needs no root).
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <set>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/unix_user.h"

namespace cardiac::e2e {
namespace {

// The job every test runs: records "<job> <attempt> <CUDA_VISIBLE_DEVICES> <user>" in
// $WORK/log.<job> and waits (bounded) until $WORK/go.<job> or $WORK/go.all appears.
constexpr const char* kJobScript = R"sh(#!/bin/sh
w="$1"
echo "$CARDIAC_JOB_ID $CARDIAC_JOB_ATTEMPT $CUDA_VISIBLE_DEVICES $(id -un)" >> "$w/log.$CARDIAC_JOB_ID"
i=0
while [ ! -e "$w/go.$CARDIAC_JOB_ID" ] && [ ! -e "$w/go.all" ] && [ $i -lt 1200 ]; do
  sleep 0.05
  i=$((i+1))
done
exit 0
)sh";

std::string fmt_state(const std::string& s) {
  return "state=\"" + s + "\"";
}

class QueueE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "creates Unix users and runs jobs as them: needs root";
    std::string tag = std::to_string(getpid() % 100000);
    a_ = std::make_unique<TestUser>("cq" + tag + "a");
    b_ = std::make_unique<TestUser>("cq" + tag + "b");
    ASSERT_TRUE(a_->ok() && b_->ok()) << "useradd failed";
    auto sc = scenario("healthy-8xh100.json");
    // No process outside the queue on any GPU (the fixture's training processes would make
    // GPUs 0-3 busy).
    for (auto& d : sc["devices"]) d["processes"] = nlohmann::json::array();
    scenario_ = sc;
    start_agent("[queue]\nbackoff = \"100ms\"\ngrace = \"1s\"\n" + queue_keys());
  }

  // More [queue] keys for a fixture's agent (the policy).
  virtual std::string queue_keys() { return ""; }

  void TearDown() override {
    if (!agent_) return;
    std::ofstream(work_ + "/go.all").flush();
    eventually([&] { return jobs_json(true).empty() || active_jobs() == 0; }, 15);
    agent_.reset();
  }

  void start_agent(const std::string& extra) {
    agent_ = std::make_unique<AgentProcess>(scenario_.dump(), extra);
    agent_->agent_keys("interval = \"200ms\"\n");
    chmod(agent_->dir().c_str(), 0755);  // the users reach the socket and their scripts
    work_ = agent_->dir() + "/work";
    mkdir(work_.c_str(), 0777);
    chmod(work_.c_str(), 01777);
    // The users run a copy of cardiac from here: the build tree may sit in a directory they
    // cannot enter (CI under /root).
    client_ = agent_->dir() + "/cardiac";
    std::filesystem::copy_file(CARDIAC_BINARY, client_);
    chmod(client_.c_str(), 0755);
    script_ = work_ + "/job.sh";
    std::ofstream(script_) << kJobScript;
    chmod(script_.c_str(), 0755);
    ASSERT_TRUE(agent_->start());
    ASSERT_TRUE(eventually([&] {
      auto s = agent_->get("/api/v1/status");
      return s.first == 200 && s.second.find("\"gpus\"") != std::string::npos &&
             nlohmann::json::parse(s.second)["gpus"].size() == 8;
    }));
  }

  RunResult as(const TestUser* user, const std::vector<std::string>& args) {
    return run_as(user, client_, work_, agent_->state_dir(), args);
  }

  // Submits the waiting job as `user` with more submit options; returns its id.
  std::int64_t submit(const TestUser* user, unsigned gpus,
                      const std::vector<std::string>& options = {}) {
    std::vector<std::string> args = {"submit", "-q", "--gpus", std::to_string(gpus)};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", script_, work_});
    auto r = as(user, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? std::stoll(r.out) : -1;
  }

  // The value of the first /metrics series of `name` whose labels include `label`.
  std::optional<double> metric(const std::string& name, const std::string& label = "") {
    std::istringstream in(agent_->get("/metrics").second);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
      auto brace = line.find('}');
      std::string labels = brace == std::string::npos ? "" : line.substr(0, brace);
      if (!label.empty() && labels.find(label) == std::string::npos) continue;
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return std::nullopt;
  }

  nlohmann::json jobs_json(bool all) {
    std::vector<std::string> args = {"queue", "--json"};
    if (all) args.push_back("--all");
    auto r = as(nullptr, args);
    if (r.exit_code != 0) return nlohmann::json::array();
    return nlohmann::json::parse(r.out);
  }

  nlohmann::json job(std::int64_t id) {
    for (const auto& j : jobs_json(true)) {
      if (j["id"] == id) return j;
    }
    return {};
  }

  std::string state(std::int64_t id) { return job(id).value("state", "?"); }

  bool reaches(std::int64_t id, const std::string& want) {
    return eventually([&] { return state(id) == want; }, 30);
  }

  int active_jobs() {
    int n = 0;
    for (const auto& j : jobs_json(false)) n += j["state"] == "running" ? 1 : 0;
    return n;
  }

  void release(std::int64_t id) { std::ofstream(work_ + "/go." + std::to_string(id)).flush(); }

  // Lines of $WORK/log.<id>: "<job> <attempt> <CUDA_VISIBLE_DEVICES> <user>".
  std::vector<std::vector<std::string>> log_lines(std::int64_t id) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(read_text(work_ + "/log." + std::to_string(id)));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::vector<std::string> w;
      std::string x;
      while (words >> x) w.push_back(x);
      out.push_back(w);
    }
    return out;
  }

  std::set<std::string> uuids_of(std::int64_t id, std::size_t attempt = 1) {
    std::set<std::string> out;
    auto lines = log_lines(id);
    if (lines.size() < attempt || lines[attempt - 1].size() < 3) return out;
    std::stringstream s(lines[attempt - 1][2]);
    std::string u;
    while (std::getline(s, u, ',')) out.insert(u);
    return out;
  }

  std::string uuid_of_gpu(unsigned i) { return scenario_["devices"][i]["uuid"]; }

  nlohmann::json scenario_;
  std::unique_ptr<TestUser> a_, b_;
  std::unique_ptr<AgentProcess> agent_;
  std::string work_, script_, client_;
};

TEST_F(QueueE2E, TwoUsersGetDisjointGpusInFcfsOrderAndCannotTouchEachOthersJobs) {
  auto j1 = submit(a_.get(), 4);
  auto j2 = submit(b_.get(), 3);
  auto j3 = submit(a_.get(), 1);
  for (auto id : {j1, j2, j3}) ASSERT_TRUE(reaches(id, "running")) << id;
  ASSERT_TRUE(eventually([&] { return log_lines(j3).size() == 1 && log_lines(j2).size() == 1; }));
  // Exclusive jobs: disjoint GPU sets covering the machine, by UUID, run as their owners.
  std::set<std::string> all;
  std::size_t total = 0;
  for (auto [id, n, user] :
       {std::tuple{j1, 4u, a_.get()}, std::tuple{j2, 3u, b_.get()}, std::tuple{j3, 1u, a_.get()}}) {
    ASSERT_TRUE(eventually([&] { return !log_lines(id).empty(); }));
    auto u = uuids_of(id);
    EXPECT_EQ(u.size(), n) << id;
    EXPECT_EQ(log_lines(id)[0][3], user->name());
    total += u.size();
    all.insert(u.begin(), u.end());
  }
  EXPECT_EQ(total, 8u);
  EXPECT_EQ(all.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) EXPECT_TRUE(all.count(uuid_of_gpu(i))) << i;

  // The machine is full: these wait, in submit order.
  auto j4 = submit(b_.get(), 1);
  auto j5 = submit(a_.get(), 1);
  auto j6 = submit(b_.get(), 1);
  EXPECT_EQ(state(j4), "pending");

  // Everyone may list; only the owner may cancel or read the output.
  auto listed = as(b_.get(), {"queue"});
  EXPECT_EQ(listed.exit_code, 0);
  EXPECT_NE(listed.out.find(a_->name()), std::string::npos) << listed.out;
  auto denied = as(b_.get(), {"cancel", std::to_string(j1)});
  EXPECT_EQ(denied.exit_code, 3) << denied.out << denied.err;
  EXPECT_NE(denied.err.find("may not cancel job " + std::to_string(j1)), std::string::npos)
      << denied.err;
  EXPECT_EQ(as(b_.get(), {"logs", std::to_string(j1)}).exit_code, 3);
  EXPECT_EQ(as(b_.get(), {"hold", std::to_string(j5)}).exit_code, 3);
  EXPECT_EQ(state(j1), "running");
  EXPECT_EQ(state(j5), "pending");

  // One GPU frees at a time: the head of the queue gets it.
  auto j3_gpu = uuids_of(j3);
  release(j3);
  ASSERT_TRUE(reaches(j4, "running"));
  EXPECT_EQ(state(j5), "pending");
  EXPECT_EQ(state(j6), "pending");
  ASSERT_TRUE(eventually([&] { return !log_lines(j4).empty(); }));
  EXPECT_EQ(uuids_of(j4), j3_gpu);
  release(j4);
  ASSERT_TRUE(reaches(j5, "running"));
  EXPECT_EQ(state(j6), "pending");
  // B cancels its own pending job; A's keep their places.
  auto cancel = as(b_.get(), {"cancel", std::to_string(j6)});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(state(j6), "cancelled");
  EXPECT_EQ(state(j3), "completed");

  // Metrics and the API see the queue. Running: j1 (4 GPUs), j2 (3), j5 (1), so all 8 GPUs
  // are allocated; j7 waits. The scenario has GPUs 0-3 at 94-97 % and GPUs 4-7 at 0 %
  // utilization, so four allocated GPUs are idle.
  auto j7 = submit(a_.get(), 1);
  EXPECT_EQ(state(j7), "pending");
  auto jobs_in = [&](const char* s) { return metric("cardiac_queue_jobs", fmt_state(s)); };
  ASSERT_TRUE(eventually([&] { return metric("cardiac_queue_gpus_allocated_idle") == 4.0; }))
      << agent_->get("/metrics").second;
  EXPECT_EQ(jobs_in("running"), 3.0);
  EXPECT_EQ(jobs_in("pending"), 1.0);
  EXPECT_EQ(jobs_in("completed"), 2.0);  // j3, j4
  EXPECT_EQ(jobs_in("cancelled"), 1.0);
  EXPECT_EQ(metric("cardiac_queue_gpus_allocated"), 8.0);
  EXPECT_EQ(metric("cardiac_queue_gpus_fenced"), 0.0);
  // j1-j5 started (j6 was cancelled while pending, j7 waits).
  EXPECT_EQ(metric("cardiac_queue_wait_seconds_count"), 5.0);
  auto api = nlohmann::json::parse(agent_->get("/api/v1/queue").second);
  EXPECT_EQ(api["counts"]["running"], 3);
  EXPECT_EQ(api["counts"]["pending"], 1);
  EXPECT_EQ(api["counts"]["cancelled"], 1);
  EXPECT_EQ(api["gpus_allocated"], 8);
  EXPECT_EQ(api["gpus_allocated_idle"], 4);

  auto logs = as(a_.get(), {"logs", std::to_string(j3)});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
}

TEST_F(QueueE2E, AGpuLostMidJobIsFencedAndTheJobRequeuedOntoAHealthyGpu) {
  auto id = submit(a_.get(), 1);
  ASSERT_TRUE(reaches(id, "running"));
  ASSERT_TRUE(eventually([&] { return !log_lines(id).empty(); }));
  std::string first = *uuids_of(id).begin();
  unsigned lost = 0;
  for (unsigned i = 0; i < 8; ++i) {
    if (uuid_of_gpu(i) == first) lost = i;
  }
  scenario_["devices"][lost]["state"] = "lost";
  agent_->write_scenario(scenario_.dump());
  ASSERT_TRUE(eventually([&] { return log_lines(id).size() == 2; }, 30)) << read_text(work_);
  auto second = uuids_of(id, 2);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(*second.begin(), first);
  EXPECT_EQ(log_lines(id)[1][1], "2");  // attempt 2
  EXPECT_EQ(state(id), "running");
  EXPECT_EQ(job(id)["restarts"], 1);

  auto fences = as(nullptr, {"fence", "list", "--json"});
  ASSERT_EQ(fences.exit_code, 0) << fences.err;
  auto f = nlohmann::json::parse(fences.out)["fences"];
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["gpu"], lost);
  EXPECT_EQ(f[0]["uuid"], first);
  EXPECT_TRUE(f[0]["automatic"].get<bool>());
  EXPECT_NE(f[0]["reason"].get<std::string>().find("lost"), std::string::npos);
  auto why = as(a_.get(), {"why", std::to_string(id)});
  EXPECT_NE(why.out.find("requeued"), std::string::npos) << why.out;

  // Users may not clear fences; root may, and hears that the GPU is still lost.
  EXPECT_EQ(as(a_.get(), {"fence", "clear", std::to_string(lost)}).exit_code, 3);
  auto clear = as(nullptr, {"fence", "clear", std::to_string(lost)});
  EXPECT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_NE(clear.err.find("still critical"), std::string::npos) << clear.err;
}

TEST_F(QueueE2E, AgentKillNineAndRestartLosesNothing) {
  auto keeps = submit(a_.get(), 2);
  auto ends = submit(b_.get(), 2);
  auto waits = submit(a_.get(), 8);
  ASSERT_TRUE(reaches(keeps, "running"));
  ASSERT_TRUE(reaches(ends, "running"));
  auto runner = job(keeps)["runner_pid"];
  EXPECT_EQ(state(waits), "pending");
  agent_->kill9();

  // While no agent runs, one job finishes; its runner records the end.
  release(ends);
  std::string exit_file = agent_->state_dir() + "/jobs/" + std::to_string(ends) + ".exit";
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(exit_file); }));
  ASSERT_TRUE(agent_->start());

  ASSERT_TRUE(reaches(ends, "completed"));
  EXPECT_EQ(job(ends)["exit_code"], 0);
  EXPECT_EQ(state(keeps), "running");
  EXPECT_EQ(job(keeps)["runner_pid"], runner);  // adopted, not restarted
  EXPECT_EQ(job(keeps)["attempt"], 1);
  EXPECT_EQ(state(waits), "pending");
  auto later = submit(b_.get(), 1);
  release(keeps);
  ASSERT_TRUE(reaches(keeps, "completed"));
  ASSERT_TRUE(reaches(waits, "running"));
  release(waits);
  ASSERT_TRUE(reaches(later, "running"));
  release(later);
  ASSERT_TRUE(reaches(later, "completed"));
  std::set<std::int64_t> ids;
  for (const auto& j : jobs_json(true)) ids.insert(j["id"].get<std::int64_t>());
  EXPECT_EQ(ids, (std::set<std::int64_t>{keeps, ends, waits, later}));
}

TEST_F(QueueE2E, BadRequestsAreRefusedAndNothingIsQueued) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"submit", "--gpus", "9", "--", script_}, 2, "9 GPUs"},
      {{"submit", "--gpu-mem", "100G", "--", script_}, 2, "GiB"},
      {{"submit", "--gpu-mem", "lots", "--", script_}, 2, "not a size"},
      {{"submit", "--time", "forever", "--", script_}, 2, "not a time limit"},
      {{"submit", "--gpus", "2"}, 2, "no command"},
      {{"submit", "--frobnicate", "--", script_}, 2, "--frobnicate"},
      {{"submit", "--after", "999", "--", script_}, 2, "no such job"},
      {{"submit", "--priority", "10", "--", script_}, 3, "priority"},
      {{"cancel", "424242"}, 2, "no job 424242"},
  };
  for (const auto& c : cases) {
    auto r = as(a_.get(), c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args[1] << " " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_TRUE(jobs_json(true).empty());
}

TEST_F(QueueE2E, GpusBusyOutsideTheQueueAreLeftAlone) {
  // A process the queue did not start holds GPU 0.
  scenario_["devices"][0]["processes"] = {{{"pid", getpid()}, {"used_memory_bytes", 1 << 30}}};
  agent_->write_scenario(scenario_.dump());
  ASSERT_TRUE(eventually([&] {
    auto api = nlohmann::json::parse(agent_->get("/api/v1/queue").second);
    return api["busy_outside"].contains("0");
  }));
  auto big = submit(a_.get(), 8);
  ASSERT_TRUE(eventually([&] {
    return job(big).value("why", "").find("GPU 0") != std::string::npos;
  })) << job(big).dump();
  EXPECT_EQ(state(big), "pending");
  EXPECT_EQ(as(a_.get(), {"cancel", std::to_string(big)}).exit_code, 0);
  auto seven = submit(b_.get(), 7);
  ASSERT_TRUE(reaches(seven, "running"));
  ASSERT_TRUE(eventually([&] { return !log_lines(seven).empty(); }));
  EXPECT_FALSE(uuids_of(seven).count(uuid_of_gpu(0)));
}

// `logs -f` waits for the job like a shell waits for a command: 1 when it did not complete.
// `jobs` heads its GPU column as the indices it holds, unlike `queue`'s GPU count.
TEST_F(QueueE2E, FollowingAFailedJobsLogsExitsOne) {
  auto sub =
      as(a_.get(), {"submit", "-q", "--gpus", "1", "--", "/bin/sh", "-c", "echo hi; exit 3"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = std::to_string(std::stoll(sub.out));
  auto logs = as(a_.get(), {"logs", id, "-f"});
  EXPECT_EQ(logs.exit_code, 1) << logs.err;
  EXPECT_EQ(logs.out, "hi\n");
  EXPECT_NE(logs.err.find("job " + id + " ended failed"), std::string::npos) << logs.err;
  // Without -f it only prints what there is.
  EXPECT_EQ(as(a_.get(), {"logs", id}).exit_code, 0);

  auto ok = as(a_.get(), {"submit", "-q", "--gpus", "1", "--", "/bin/sh", "-c", "echo fine"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  logs = as(a_.get(), {"logs", std::to_string(std::stoll(ok.out)), "-f"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "fine\n");

  auto jobs = as(a_.get(), {"jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  const std::string header = jobs.out.substr(0, jobs.out.find('\n'));
  EXPECT_NE(header.find("GPU IDS"), std::string::npos) << header;
  EXPECT_EQ(header.find(" GPUS "), std::string::npos) << header;
}

// GPU 0 reaches its slowdown temperature: the default critical rule fires on it. It is not
// fenced, but a 1-GPU job goes elsewhere; a 7-GPU job, which needs it, still gets it.
TEST_F(QueueE2E, NewWorkAvoidsAGpuWithACriticalAlertFiring) {
  scenario_["devices"][0]["temperature"] = 90;
  agent_->write_scenario(scenario_.dump());
  ASSERT_TRUE(eventually([&] {
    auto api = nlohmann::json::parse(agent_->get("/api/v1/queue").second);
    return api["critical_alerts"].contains("0");
  })) << agent_->get("/api/v1/queue").second;
  auto one = submit(a_.get(), 1);
  ASSERT_TRUE(reaches(one, "running"));
  ASSERT_TRUE(eventually([&] { return !log_lines(one).empty(); }));
  EXPECT_FALSE(uuids_of(one).count(uuid_of_gpu(0)));
  auto seven = submit(b_.get(), 7);
  ASSERT_TRUE(reaches(seven, "running"));
  ASSERT_TRUE(eventually([&] { return !log_lines(seven).empty(); }));
  EXPECT_TRUE(uuids_of(seven).count(uuid_of_gpu(0)));
}

// GPU 3 fenced: an 8-GPU job is told at submit and in `why` that only 7 GPUs are healthy, and
// the FCFS queue behind it keeps running.
TEST_F(QueueE2E, AJobLargerThanTheHealthyGpusIsToldAndDoesNotBlock) {
  auto fence = as(nullptr, {"fence", "add", "3", "--reason", "bad fan"});
  ASSERT_EQ(fence.exit_code, 0) << fence.err;
  // The queue's own view has it (submit checks against that view).
  ASSERT_TRUE(eventually([&] { return metric("cardiac_queue_gpus_fenced") == 1.0; }));
  auto big = as(a_.get(), {"submit", "-q", "--gpus", "8", "--", script_, work_});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(big.err.find("warning: needs 8 GPUs, 7 healthy"), std::string::npos) << big.err;
  const std::int64_t id = std::stoll(big.out);
  auto two = submit(b_.get(), 2);
  ASSERT_TRUE(reaches(two, "running"));
  EXPECT_EQ(state(id), "pending");
  auto why = as(a_.get(), {"why", std::to_string(id)});
  EXPECT_NE(why.out.find("needs 8 GPUs, 7 healthy"), std::string::npos) << why.out;
  EXPECT_EQ(as(a_.get(), {"cancel", std::to_string(id)}).exit_code, 0);
}

class QueuePriorityE2E : public QueueE2E {
  std::string queue_keys() override { return "policy = \"priority\"\n"; }
};

TEST_F(QueuePriorityE2E, TheHigherPriorityJobStartsFirst) {
  auto blocker = submit(b_.get(), 8);
  ASSERT_TRUE(reaches(blocker, "running"));
  // The same user, so fair share is equal; users may only lower their priority below 0.
  auto low = submit(a_.get(), 8, {"--priority", "-500"});
  auto high = submit(a_.get(), 8, {"--priority", "-10"});
  EXPECT_EQ(state(low), "pending");
  EXPECT_EQ(state(high), "pending");
  release(blocker);
  ASSERT_TRUE(reaches(high, "running"));
  EXPECT_EQ(state(low), "pending");
  auto why = as(a_.get(), {"why", std::to_string(low), "--json"});
  ASSERT_EQ(why.exit_code, 0) << why.err;
  auto w = nlohmann::json::parse(why.out);
  EXPECT_EQ(w["priority"]["qos_factor"], 0.0) << w;  // the lowest pending priority
  release(high);
  ASSERT_TRUE(reaches(low, "running"));
}

// Factors recomputed before every pass: the usage A built counts at once, not at the next
// recomputation (by default up to 5 minutes later).
class QueueFairShareE2E : public QueueE2E {
  std::string queue_keys() override { return "policy = \"fairshare\"\npriority_calc_period = 0\n"; }
};

TEST_F(QueueFairShareE2E, TheUserWhoUsedLessStartsFirst) {
  // A builds usage: one GPU, run until the test lets it end.
  auto used = submit(a_.get(), 1);
  ASSERT_TRUE(reaches(used, "running"));
  ASSERT_TRUE(eventually([&] { return !log_lines(used).empty(); }));
  release(used);
  ASSERT_TRUE(reaches(used, "completed"));
  // Root holds every GPU while both users queue; A first.
  auto blocker = submit(nullptr, 8);
  ASSERT_TRUE(reaches(blocker, "running"));
  auto a_job = submit(a_.get(), 8);
  auto b_job = submit(b_.get(), 8);
  auto share = as(nullptr, {"share", "--json"});
  ASSERT_EQ(share.exit_code, 0) << share.err;
  std::map<std::string, double> usage;
  const auto rows = nlohmann::json::parse(share.out)["rows"];
  for (const auto& r : rows) {
    auto user = r["user"].get<std::string>();
    if (!user.empty()) usage[user] = r["raw_usage"].get<double>();
  }
  EXPECT_GT(usage[a_->name()], 0) << share.out;
  EXPECT_EQ(usage[b_->name()], 0) << share.out;
  release(blocker);
  ASSERT_TRUE(reaches(b_job, "running"));
  EXPECT_EQ(state(a_job), "pending");
  release(b_job);
  ASSERT_TRUE(reaches(a_job, "running"));
}

// `cardiac agent` finds its state directory as the clients do: --state-dir, else
// CARDIAC_STATE_DIR, else agent.state_dir of the file. Needs no root.
TEST(AgentStateDir, TheEnvironmentBeatsTheFileAndTheFlagBeatsBoth) {
  auto sc = scenario("healthy-8xh100.json");
  AgentProcess files(sc.dump(), "");  // its configuration names <dir>/state
  const std::string env_dir = files.dir() + "/from-env";
  const std::string flag_dir = files.dir() + "/from-flag";
  // Runs the agent until it answers, checks that a client using `client_dir` reaches its
  // queue, then stops it.
  auto serve = [&](const std::vector<std::string>& flags, const std::string& client_dir) {
    SpawnOptions o;
    o.argv = {CARDIAC_BINARY, "agent", "--config", files.config_path()};
    o.argv.insert(o.argv.end(), flags.begin(), flags.end());
    o.env = {{"CARDIAC_FAKE_NVML_SCENARIO", files.dir() + "/scenario.json"},
             {"CARDIAC_STATE_DIR", env_dir}};
    o.pipe_stdin = false;
    o.pipe_stdout = false;
    auto child = Child::spawn(o);
    if (!child) return false;
    bool up = eventually([&] { return files.get("/healthz").first == 200; });
    auto r = run_as(nullptr, CARDIAC_BINARY, "/", client_dir, {"queue", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    child->signal(SIGTERM);
    child->wait();
    return up;
  };
  ASSERT_TRUE(serve({}, env_dir));
  EXPECT_TRUE(std::filesystem::exists(env_dir + "/cardiac.db"));
  EXPECT_FALSE(std::filesystem::exists(files.state_dir() + "/cardiac.db"));
  ASSERT_TRUE(serve({"--state-dir", flag_dir}, flag_dir));
  EXPECT_TRUE(std::filesystem::exists(flag_dir + "/cardiac.db"));
  EXPECT_FALSE(std::filesystem::exists(files.state_dir() + "/cardiac.db"));
}

}  // namespace
}  // namespace cardiac::e2e
