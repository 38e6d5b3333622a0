// SPDX-License-Identifier: Apache-2.0
// /proc/<pid> readers and the scan for processes in uninterruptible sleep.
#include "host/processes.h"

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

// Fields after "pid (comm)": state is field 3 of stat(5); num_threads is field 20.
constexpr std::size_t kStateIdx = 0;
constexpr std::size_t kPpidIdx = 1;
constexpr std::size_t kPgrpIdx = 2;
constexpr std::size_t kSessionIdx = 3;
constexpr std::size_t kUtimeIdx = 11;
constexpr std::size_t kStimeIdx = 12;
constexpr std::size_t kThreadsIdx = 17;
constexpr std::size_t kStartTimeIdx = 19;

// /proc/<pid>/stat is one short line; a bigger read means something else is there.
constexpr std::size_t kStatMax = 4096;
constexpr std::size_t kCmdlineMax = 4096;

std::string pid_path(std::int64_t pid, std::string_view leaf) {
  return fmt::format("/proc/{}/{}", pid, leaf);
}

}  // namespace

Result<ProcStat> parse_proc_pid_stat(std::string_view text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return fail(line_error(1, fmt::format("no '(comm)' in '{}'", excerpt(text))));
  }
  ProcStat out;
  auto pid = parse_i64(text.substr(0, open));
  if (!pid || *pid <= 0) return fail(line_error(1, fmt::format("bad pid in '{}'", excerpt(text))));
  out.pid = *pid;
  out.comm = std::string(text.substr(open + 1, close - open - 1));
  auto f = split_ws(trim(text.substr(close + 1)));
  if (f.size() <= kThreadsIdx || f[kStateIdx].size() != 1) {
    return fail(
        line_error(1, fmt::format("truncated after comm: '{}'", excerpt(text.substr(close + 1)))));
  }
  out.state = f[kStateIdx][0];
  auto ppid = parse_i64(f[kPpidIdx]);
  auto pgrp = parse_i64(f[kPgrpIdx]);
  auto session = parse_i64(f[kSessionIdx]);
  auto utime = parse_u64(f[kUtimeIdx]);
  auto stime = parse_u64(f[kStimeIdx]);
  auto threads = parse_u64(f[kThreadsIdx]);
  if (!ppid || !pgrp || !session || !utime || !stime || !threads) {
    return fail(line_error(1, fmt::format("bad number in '{}'", excerpt(text.substr(close + 1)))));
  }
  out.ppid = *ppid;
  out.pgrp = *pgrp;
  out.session = *session;
  out.utime = *utime;
  out.stime = *stime;
  out.num_threads = *threads;
  if (f.size() > kStartTimeIdx) out.start_ticks = parse_u64(f[kStartTimeIdx]);
  return out;
}

std::string parse_cmdline(std::string_view text) {
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  std::string out(text);
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

namespace {

// The state field follows "(comm) ", after the last ')' (a comm may hold ')' and spaces).
bool in_d_state(std::string_view stat) {
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos) return false;
  const auto state = stat.find_first_not_of(' ', close + 1);
  return state != std::string_view::npos && stat[state] == 'D';
}

}  // namespace

Result<std::vector<DStateProcess>> collect_dstate_processes(const FileSystem& fs) {
  auto entries = fs.list_dir("/proc");
  if (!entries) return fail(entries.error());
  std::vector<DStateProcess> out;
  for (const std::string& name : *entries) {
    auto pid = parse_i64(name);
    if (!pid || *pid <= 0) continue;
    auto text = fs.read_file(pid_path(*pid, "stat"), kStatMax);
    if (!text) continue;  // exited since the listing
    // Most processes are not in D: their state is read without parsing the rest of the line
    // (this scan reads every process every few seconds).
    if (!in_d_state(*text)) continue;
    auto st = parse_proc_pid_stat(*text);
    if (!st || st->state != 'D') continue;
    DStateProcess p{*pid, st->comm, detail::read_attr(fs, pid_path(*pid, "wchan")), {}};
    if (p.wchan == "0") p.wchan.reset();
    if (auto cmd = fs.read_file(pid_path(*pid, "cmdline"), kCmdlineMax)) {
      p.cmdline = parse_cmdline(*cmd);
    }
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const DStateProcess& a, const DStateProcess& b) { return a.pid < b.pid; });
  return out;
}

Result<std::string> read_process_name(const FileSystem& fs, std::int64_t pid) {
  auto text = fs.read_file(pid_path(pid, "comm"), kStatMax);
  if (!text) return fail(text.error());
  return std::string(trim(*text));
}

Result<ProcessCpu> read_process_cpu(const FileSystem& fs, std::int64_t pid) {
  auto st = detail::read_and_parse(fs, pid_path(pid, "stat"), parse_proc_pid_stat, kStatMax);
  if (!st) return fail(st.error());
  return ProcessCpu{st->utime + st->stime, st->num_threads};
}

}  // namespace cardiac::host
