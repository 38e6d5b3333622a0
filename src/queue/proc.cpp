// SPDX-License-Identifier: Apache-2.0
// /proc/<pid>/stat parsing and the liveness and ancestry checks built on it.
#include "queue/proc.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/strings.h"

namespace cardiac::queue {

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  auto pid = parse_i64(text.substr(0, open));
  // After ") ": state (field 3), ppid (4), pgrp (5), session (6), …, starttime (22).
  auto fields = split_ws(text.substr(close + 1));
  if (!pid || fields.size() < 20 || fields[0].size() != 1) return std::nullopt;
  auto ppid = parse_i64(fields[1]);
  auto pgrp = parse_i64(fields[2]);
  auto session = parse_i64(fields[3]);
  auto start = parse_i64(fields[19]);
  if (!ppid || !pgrp || !session || !start) return std::nullopt;
  ProcStat s;
  s.pid = static_cast<pid_t>(*pid);
  s.state = fields[0][0];
  s.ppid = static_cast<pid_t>(*ppid);
  s.pgrp = static_cast<pid_t>(*pgrp);
  s.session = static_cast<pid_t>(*session);
  s.start_ticks = *start;
  return s;
}

std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return parse_proc_stat(s.str());
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
