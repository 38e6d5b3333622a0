// SPDX-License-Identifier: Apache-2.0
// /proc/<pid>/stat parsing and the liveness and ancestry checks built on it.
#include "queue/proc.h"

#include <signal.h>

#include <filesystem>

#include "core/strings.h"
#include "host/processes.h"
#include "platform/fs.h"

namespace cardiac::queue {

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // The host reader owns the format; the queue needs the start time as well.
  auto h = host::parse_proc_pid_stat(text);
  if (!h || !h->start_ticks) return std::nullopt;
  ProcStat s;
  s.pid = static_cast<pid_t>(h->pid);
  s.state = h->state;
  s.ppid = static_cast<pid_t>(h->ppid);
  s.pgrp = static_cast<pid_t>(h->pgrp);
  s.session = static_cast<pid_t>(h->session);
  s.start_ticks = static_cast<std::int64_t>(*h->start_ticks);
  return s;
}

// Read with the platform's reader (open and read(2), no stream): the loop asks this for every
// GPU process at every sample, and an ifstream (its buffer, its locale) cost several times that.
std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  // A stat line is a few hundred bytes: the name is at most 64 and the 50 numbers are short.
  constexpr std::size_t kStatMax = 4096;
  auto text = RootFs().read_file(proc_root + "/" + std::to_string(pid) + "/stat", kStatMax);
  if (!text) return std::nullopt;
  return parse_proc_stat(*text);
}

bool process_alive(pid_t pid, std::int64_t start_ticks, const std::string& proc_root) {
  auto st = read_proc_stat(pid, proc_root);
  return st && st->state != 'Z' && st->state != 'X' && st->start_ticks == start_ticks;
}

bool belongs_to_runner(pid_t pid, const std::set<pid_t>& runners, const std::string& proc_root) {
  if (runners.empty()) return false;
  pid_t p = pid;
  for (int depth = 0; depth < 64 && p > 1; ++depth) {
    if (runners.count(p)) return true;
    auto st = read_proc_stat(p, proc_root);
    if (!st) return false;
    if (runners.count(st->session)) return true;
    p = st->ppid;
  }
  return false;
}

int signal_session(pid_t session, std::int64_t min_start, int sig, const std::string& proc_root) {
  if (session <= 1) return 0;
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc_root, ec)) {
    auto pid = parse_i64(e.path().filename().string());
    if (!pid) continue;
    auto st = read_proc_stat(static_cast<pid_t>(*pid), proc_root);
    if (!st || st->session != session || st->start_ticks < min_start) continue;
    if (::kill(st->pid, sig) == 0) ++n;
  }
  return n;
}

}  // namespace cardiac::queue
