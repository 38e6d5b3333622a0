// SPDX-License-Identifier: Apache-2.0
// The live queue's job record: what was asked for (command, environment, GPUs, limits), who
// asked, and what became of it; its states and their names; the parsers for the request
// values a user types (`--gpu-mem 20G`, `--time 2h`).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::queue {

using JobId = std::int64_t;

// pending → running → completed | failed | timeout | cancelled; pending ⇄ held; a job stopped
// because its GPU was fenced, or whose runner vanished, goes back to pending (a new attempt)
// until the retry limit, then ends failed or lost.
enum class JobState { kPending, kHeld, kRunning, kCompleted, kFailed, kTimeout, kCancelled, kLost };

std::string_view job_state_name(JobState s);
std::optional<JobState> parse_job_state(std::string_view s);
// True for the states a job never leaves.
bool is_terminal(JobState s);

// Why the agent stopped a running job; decides the state once its runner reports the end.
enum class StopAction { kNone, kCancel, kRequeue };
std::string_view stop_action_name(StopAction a);
StopAction parse_stop_action(std::string_view s);

// What a client asks for. Identity (uid, groups) is not here: the agent takes it from the
// socket's peer credentials, never from the request.
struct SubmitRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string cwd = "/";
  std::string name;
  unsigned gpus = 1;
  std::uint64_t gpu_mem = 0;  // bytes per GPU (0: any)
  bool shared = false;
  int priority = 0;
  DurationNs time_limit = 0;  // 0: none
  std::vector<JobId> after;
  std::string account;  // fair-share account ("": the user's default)
};

struct Job {
  JobId id = 0;
  JobState state = JobState::kPending;
  std::string user;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string account;
  std::string name;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string cwd;
  unsigned gpus = 1;
  std::uint64_t gpu_mem = 0;
  bool shared = false;
  int priority = 0;
  DurationNs time_limit = 0;
  std::vector<JobId> after;
  TimeNs submit_ns = 0;
  std::optional<TimeNs> first_start_ns;
  std::optional<TimeNs> start_ns;  // of the current (or last) attempt
  std::optional<TimeNs> end_ns;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::vector<unsigned> gpu_indices;  // of the current (or last) attempt
  std::vector<std::string> gpu_uuids;
  std::optional<pid_t> runner_pid;
  std::optional<std::int64_t> runner_start;  // /proc/<pid>/stat starttime, against pid reuse
  unsigned attempt = 0;                      // starts so far
  unsigned restarts = 0;                     // requeues so far
  TimeNs not_before_ns = 0;                  // backoff after a requeue
  // When it became eligible (released from hold, dependencies met); the age factor counts
  // from here. Unset: from submit_ns.
  std::optional<TimeNs> eligible_ns;
  StopAction stop_action = StopAction::kNone;
  std::string reason;  // why it waits, or how it ended
};

// One start of a job.
struct Attempt {
  JobId job = 0;
  unsigned attempt = 0;
  TimeNs start_ns = 0;
  std::optional<TimeNs> end_ns;
  std::vector<unsigned> gpu_indices;
  std::vector<std::string> gpu_uuids;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string outcome;  // the state it led to: "completed", "failed", "requeued", …
  std::string reason;
};

// The JSON clients and the API see. Never contains the environment; `detail` adds the
// command's working directory, groups and runner.
nlohmann::json to_json(const Job& j, bool detail = false);
nlohmann::json to_json(const Attempt& a);

// Request values as users type them.
// "20G", "20GiB", "512M", "1.5T", "80000000000": binary units (K, M, G, T = 1024^n); errors
// name the text.
Result<std::uint64_t> parse_size(std::string_view text);
// "2h", "90m", "1h30m", "45s", a bare number of seconds; must be > 0.
Result<DurationNs> parse_time_limit(std::string_view text);

// SubmitRequest <-> the protocol's JSON. Parsing checks types and ranges (argv not empty,
// 1..1024 GPUs, priority within ±1000, …) and names the field at fault.
nlohmann::json to_json(const SubmitRequest& r);
Result<SubmitRequest> parse_submit(const nlohmann::json& j);

}  // namespace cardiac::queue
