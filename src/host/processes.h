// SPDX-License-Identifier: Apache-2.0
// Per-process readers under /proc/<pid>: stat, comm, cmdline, wchan; the D-state scan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

// The fields of /proc/<pid>/stat that cardiac uses.
struct ProcStat {
  std::int64_t pid = 0;
  std::string comm;  // without the parentheses; may contain spaces and ')'
  char state = '?';  // R, S, D, Z, T, t, X, I, ...
  std::int64_t ppid = 0;
  std::int64_t pgrp = 0;
  std::int64_t session = 0;
  std::uint64_t utime = 0;  // jiffies
  std::uint64_t stime = 0;  // jiffies
  std::uint64_t num_threads = 0;
  // Field 22, clock ticks after boot: with the pid, it tells a process from a later one that
  // reused its pid. Absent on a line cut before it.
  std::optional<std::uint64_t> start_ticks;
};

// A task in uninterruptible sleep: the "nvidia-smi hangs" signature when wchan is in the
// NVIDIA driver.
struct DStateProcess {
  std::int64_t pid = 0;
  std::string comm;
  std::optional<std::string> wchan;  // kernel function it sleeps in; absent if hidden ("0")
  std::string cmdline;               // arguments joined by spaces; empty for kernel threads
};

struct ProcessCpu {
  std::uint64_t cpu_jiffies = 0;  // utime + stime
  std::uint64_t num_threads = 0;
};

// Parses /proc/<pid>/stat. The comm field is taken between the first '(' and the LAST ')',
// since a process may name itself "my (weird) proc". Fewer than the 20 fields up to
// num_threads, or a non-numeric one, is a parse error.
[[nodiscard]] Result<ProcStat> parse_proc_pid_stat(std::string_view text);

// Turns a NUL-separated /proc/<pid>/cmdline into one space-separated line.
[[nodiscard]] std::string parse_cmdline(std::string_view text);

// Lists /proc and returns tasks whose state is 'D', with wchan and cmdline. Processes that
// exit during the scan are skipped. A /proc that cannot be listed is an error.
[[nodiscard]] Result<std::vector<DStateProcess>> collect_dstate_processes(const FileSystem& fs);

// /proc/<pid>/comm, trimmed. A missing process is a kNotFound error.
[[nodiscard]] Result<std::string> read_process_name(const FileSystem& fs, std::int64_t pid);

// CPU time and thread count from /proc/<pid>/stat. A missing process is a kNotFound error.
[[nodiscard]] Result<ProcessCpu> read_process_cpu(const FileSystem& fs, std::int64_t pid);

}  // namespace cardiac::host
