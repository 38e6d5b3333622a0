// SPDX-License-Identifier: Apache-2.0
// The job runner, run for real (`cardiac __job-runner`) as the current user: output files,
// exit codes, the environment, time limits, a stop from the agent reaching the whole process
// group, a job that ignores SIGTERM, and commands that cannot start.
#include "queue/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>

#include "queue/proc.h"
#include "queue/tests/support.h"

namespace cardiac::queue {
namespace {

using testing::eventually;
using testing::read_text;
using testing::TempDir;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(jobs_dir(dir_.path())); }

  RunSpec spec(JobId id, std::vector<std::string> argv) {
    RunSpec s;
    s.job = id;
    s.attempt = 1;
    s.argv = std::move(argv);
    s.env = {{"PATH", "/usr/bin:/bin"}, {"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b"}};
    s.cwd = dir_.path();
    s.uid = getuid();
    s.gid = getgid();
    s.grace = 300 * kNsPerMs;
    return s;
  }

  // Starts the runner; returns its handle. The test reaps it with finish().
  RunnerHandle start(const RunSpec& s) {
    auto paths = job_paths(dir_.path(), s.job);
    EXPECT_TRUE(write_file_atomically(paths.spec, to_json(s).dump()));
    auto h = launch_runner(CARDIAC_BINARY, dir_.path(), s.job, s.attempt);
    EXPECT_TRUE(h) << h.error().what();
    return *h;
  }

  // Waits for the exit record and reaps the runner.
  ExitRecord finish(const RunnerHandle& h, JobId id) {
    auto paths = job_paths(dir_.path(), id);
    std::optional<ExitRecord> rec;
    EXPECT_TRUE(eventually([&] {
      auto r = read_exit_record(paths.exit);
      if (r && *r) rec = **r;
      return rec.has_value();
    }));
    int status = 0;
    EXPECT_EQ(waitpid(h.pid, &status, 0), h.pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return rec.value_or(ExitRecord{});
  }

  TempDir dir_;
};

TEST_F(RunnerTest, RunsTheCommandWithItsEnvironmentAndRecordsTheExit) {
  auto s = spec(1, {"sh", "-c", "echo cvd=$CUDA_VISIBLE_DEVICES; pwd; echo oops >&2; exit 3"});
  auto h = start(s);
  EXPECT_GT(h.start_ticks, 0);
  auto rec = finish(h, 1);
  EXPECT_EQ(rec.job, 1);
  EXPECT_EQ(rec.attempt, 1u);
  EXPECT_EQ(rec.exit_code, 3);
  EXPECT_FALSE(rec.signal);
  EXPECT_FALSE(rec.timed_out);
  EXPECT_FALSE(rec.stopped);
  EXPECT_LE(rec.started_ns, rec.ended_ns);
  auto paths = job_paths(dir_.path(), 1);
  EXPECT_EQ(read_text(paths.out), "cvd=GPU-a,GPU-b\n" + dir_.path() + "\n");
  EXPECT_EQ(read_text(paths.err), "oops\n");
  EXPECT_FALSE(process_alive(h.pid, h.start_ticks));
}

TEST_F(RunnerTest, TimeLimitStopsTheJob) {
  auto s = spec(2, {"sleep", "60"});
  s.time_limit = 200 * kNsPerMs;
  auto rec = finish(start(s), 2);
  EXPECT_TRUE(rec.timed_out);
  EXPECT_EQ(rec.signal, SIGTERM);
  EXPECT_NE(read_text(job_paths(dir_.path(), 2).err).find("time limit"), std::string::npos);
}

TEST_F(RunnerTest, AStopReachesTheWholeProcessGroup) {
  std::string pidfile = dir_.file("leader.pid");
  // The leader and two background children; the stop must take all three.
  auto s = spec(3, {"sh", "-c", "sleep 60 & sleep 60 & echo $$ > " + pidfile + "; wait"});
  auto h = start(s);
  ASSERT_TRUE(eventually([&] { return !read_text(pidfile).empty(); }));
  pid_t leader = std::stoi(read_text(pidfile));
  EXPECT_EQ(read_proc_stat(leader)->pgrp, leader);  // its own process group
  ASSERT_EQ(::kill(h.pid, SIGTERM), 0);
  auto rec = finish(h, 3);
  EXPECT_TRUE(rec.stopped);
  EXPECT_EQ(rec.signal, SIGTERM);
  EXPECT_TRUE(eventually([&] { return ::kill(-leader, 0) != 0 && errno == ESRCH; }));
}

TEST_F(RunnerTest, AJobThatIgnoresSigtermIsKilledAfterTheGrace) {
  std::string ready = dir_.file("ready");
  auto s = spec(4, {"sh", "-c", "trap '' TERM; touch " + ready + "; while :; do sleep 1; done"});
  auto h = start(s);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ready); }));
  ASSERT_EQ(::kill(h.pid, SIGTERM), 0);
  auto rec = finish(h, 4);
  EXPECT_TRUE(rec.stopped);
  EXPECT_EQ(rec.signal, SIGKILL);
}

TEST_F(RunnerTest, ACommandThatCannotStartSaysWhy) {
  auto rec = finish(start(spec(5, {"/no/such/program", "x"})), 5);
  EXPECT_EQ(rec.exit_code, 127);
  EXPECT_NE(rec.error.find("cannot run '/no/such/program'"), std::string::npos) << rec.error;
  EXPECT_NE(read_text(job_paths(dir_.path(), 5).err).find("No such file"), std::string::npos);

  auto s = spec(6, {"true"});
  s.cwd = dir_.file("missing");
  rec = finish(start(s), 6);
  EXPECT_NE(rec.error.find("working directory"), std::string::npos) << rec.error;
}

TEST_F(RunnerTest, AMismatchedSpecIsRecordedNotRun) {
  auto s = spec(7, {"true"});
  auto paths = job_paths(dir_.path(), 7);
  ASSERT_TRUE(write_file_atomically(paths.spec, to_json(s).dump()));
  auto h = launch_runner(CARDIAC_BINARY, dir_.path(), 7, 2);  // attempt 2, spec says 1
  ASSERT_TRUE(h);
  std::optional<ExitRecord> rec;
  ASSERT_TRUE(eventually([&] {
    auto r = read_exit_record(paths.exit);
    if (r && *r) rec = **r;
    return rec.has_value();
  }));
  waitpid(h->pid, nullptr, 0);
  EXPECT_EQ(rec->attempt, 2u);
  EXPECT_NE(rec->error.find("another attempt"), std::string::npos);
}

TEST(RunnerFiles, SpecAndExitRecordsRoundTrip) {
  RunSpec s;
  s.job = 9;
  s.attempt = 2;
  s.argv = {"a", "b c"};
  s.env = {{"X", "1"}};
  s.switch_user = true;
  s.uid = 1001;
  s.gid = 1002;
  s.groups = {1002, 27};
  s.time_limit = 5;
  auto back = parse_run_spec(to_json(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->groups, s.groups);
  EXPECT_TRUE(back->switch_user);
  EXPECT_FALSE(parse_run_spec(nlohmann::json{{"job", 1}}));
  ExitRecord e;
  e.job = 9;
  e.attempt = 2;
  e.signal = 9;
  e.stopped = true;
  auto eb = parse_exit_record(to_json(e));
  ASSERT_TRUE(eb);
  EXPECT_EQ(eb->signal, 9);
  EXPECT_FALSE(eb->exit_code);
  EXPECT_TRUE(eb->stopped);
}

}  // namespace
}  // namespace cardiac::queue
