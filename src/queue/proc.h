// SPDX-License-Identifier: Apache-2.0
// What the queue reads about processes from /proc: a runner's identity (pid + start time, so a
// reused pid is not mistaken for it) and the ancestry that tells a queue job's GPU process
// from one the queue did not start.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace cardiac::queue {

struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // R, S, D, Z, T, …
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  std::int64_t start_ticks = 0;  // field 22: clock ticks after boot
};

// Parses the text of /proc/<pid>/stat. The command name may hold spaces and parentheses, so
// the fields are counted from the last ')'. nullopt on anything malformed.
std::optional<ProcStat> parse_proc_stat(std::string_view text);
// Reads /proc/<pid>/stat under `proc_root` ("/proc"); nullopt when the process does not exist.
std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root = "/proc");

// True when `pid` exists, is not a zombie, and started at `start_ticks`.
bool process_alive(pid_t pid, std::int64_t start_ticks, const std::string& proc_root = "/proc");

// True when `pid` or one of its ancestors is in `runners`, or its session is one of theirs
// (runners lead their own session): the process belongs to a queue job. Walks at most 64
// generations.
bool belongs_to_runner(pid_t pid, const std::set<pid_t>& runners,
                       const std::string& proc_root = "/proc");

// Sends `sig` to every process of session `session` that started at or after `min_start`
// (so a reused pid's session is spared): what a vanished runner left behind. Returns how many
// were signalled.
int signal_session(pid_t session, std::int64_t min_start, int sig,
                   const std::string& proc_root = "/proc");

}  // namespace cardiac::queue
