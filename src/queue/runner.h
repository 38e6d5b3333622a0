// SPDX-License-Identifier: Apache-2.0
// The job runner: a small supervisor process per job attempt, `cardiac __job-runner <state-dir>
// <job-id> <attempt>`, started in its own session so that it outlives the agent (kill -9,
// restart) and is adopted again. It reads the attempt's spec file, drops to the submitting
// user when it runs as root, starts the command in its own process group with its output in
// <state>/jobs/<id>.out/.err, enforces the time limit (SIGTERM, grace, SIGKILL), forwards a
// SIGTERM from the agent the same way, and writes how the job ended to <state>/jobs/<id>.exit
// (temporary file + rename, so the agent never reads half a record).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "queue/job.h"

namespace cardiac::queue {

inline constexpr const char* kRunnerSubcommand = "__job-runner";

// Where a job's files live: <state>/jobs/<id>.{spec.json,out,err,exit}.
struct JobPaths {
  std::string spec;
  std::string out;
  std::string err;
  std::string exit;
};
std::string jobs_dir(const std::string& state_dir);
JobPaths job_paths(const std::string& state_dir, JobId id);

// What one attempt runs. Written by the agent (root-only file) before the runner starts.
struct RunSpec {
  JobId job = 0;
  unsigned attempt = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // complete: the job sees exactly this
  std::string cwd = "/";
  bool switch_user = false;  // runner is root: setgroups/setgid/setuid to the submitter
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  DurationNs time_limit = 0;  // 0: none
  DurationNs grace = 10 * kNsPerSec;
};
nlohmann::json to_json(const RunSpec& s);
Result<RunSpec> parse_run_spec(const nlohmann::json& j);

// How an attempt ended, as the runner saw it.
struct ExitRecord {
  JobId job = 0;
  unsigned attempt = 0;
  std::optional<int> exit_code;  // when it exited
  std::optional<int> signal;     // when a signal ended it
  bool timed_out = false;        // the runner stopped it at its time limit
  bool stopped = false;          // the runner was told to stop it (SIGTERM from the agent)
  TimeNs started_ns = 0;
  TimeNs ended_ns = 0;
  std::string error;  // the command could not be started: "cannot run 'x': No such file…"
};
nlohmann::json to_json(const ExitRecord& e);
Result<ExitRecord> parse_exit_record(const nlohmann::json& j);

// Writes `text` to `path` through `path.tmp` + fsync + rename, with `mode`.
[[nodiscard]] Status write_file_atomically(const std::string& path, const std::string& text,
                                           unsigned mode = 0600);
// The exit record at `path`; nullopt when there is none (yet). A record that does not parse is
// an error.
[[nodiscard]] Result<std::optional<ExitRecord>> read_exit_record(const std::string& path);

// A started runner: its pid and /proc start time (to recognise it after a restart).
struct RunnerHandle {
  pid_t pid = 0;
  std::int64_t start_ticks = 0;
};

// Starts `executable __job-runner state_dir id attempt` in a new session, with no inherited
// descriptors but /dev/null on 0–2. The caller (the agent) must reap it with waitpid while it
// lives; after the agent dies, init does.
[[nodiscard]] Result<RunnerHandle> launch_runner(const std::string& executable,
                                                 const std::string& state_dir, JobId id,
                                                 unsigned attempt);

// A live runner of (id, attempt) found by its command line in /proc: for the rare agent crash
// between starting a runner and recording its pid.
std::optional<RunnerHandle> find_runner(const std::string& state_dir, JobId id, unsigned attempt);

// The runner process's main: argv = {cardiac, __job-runner, state_dir, id, attempt}. Returns
// the runner's exit status (0 when it recorded the job's end, whatever that was).
int run_job_runner(int argc, char** argv);

}  // namespace cardiac::queue
