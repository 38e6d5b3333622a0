// SPDX-License-Identifier: Apache-2.0
// CPU time counters (/proc/stat), load average (/proc/loadavg) and CPU usage between samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

// Cumulative jiffies (USER_HZ ticks) of one CPU line. Guest time is already part of `user`
// and `nice` in the kernel's accounting, so the guest columns are not kept.
struct CpuTimes {
  std::uint64_t user = 0;
  std::uint64_t nice = 0;
  std::uint64_t system = 0;
  std::uint64_t idle = 0;
  std::uint64_t iowait = 0;
  std::uint64_t irq = 0;
  std::uint64_t softirq = 0;
  std::uint64_t steal = 0;
  // How many of the eight columns above the kernel wrote (4 on 2.4, 7 before 2.6.11).
  // Columns past this count are unknown, not zero.
  unsigned columns = 0;

  [[nodiscard]] bool has_iowait() const { return columns >= 5; }
  [[nodiscard]] bool has_steal() const { return columns >= 8; }
  [[nodiscard]] std::uint64_t sum() const;
};

struct CoreTimes {
  unsigned cpu = 0;  // the N of "cpuN"; offline CPUs are missing, so indices may have gaps
  CpuTimes times;
};

struct CpuStat {
  CpuTimes total;
  std::vector<CoreTimes> cores;
  std::optional<std::uint64_t> procs_running;
  std::optional<std::uint64_t> procs_blocked;  // tasks in uninterruptible (D) sleep on I/O

  // Online CPUs: the number of "cpuN" lines.
  [[nodiscard]] std::size_t core_count() const { return cores.size(); }
};

struct LoadAvg {
  double load1 = 0;
  double load5 = 0;
  double load15 = 0;
  std::uint64_t running = 0;  // runnable scheduling entities now
  std::uint64_t total = 0;    // scheduling entities that exist
};

// Percent of the interval (0..100). Absent fields were not reported by the kernel.
struct CpuUsage {
  double user = 0;    // user + nice
  double system = 0;  // system + irq + softirq
  double idle = 0;
  std::optional<double> iowait;
  std::optional<double> steal;
  double busy = 0;  // 100 - idle - iowait: time the CPU did work (steal counts as busy)
};

struct CoreUsage {
  unsigned cpu = 0;
  CpuUsage usage;
};

struct CpuUsageSample {
  std::optional<CpuUsage> total;  // absent when no tick passed between the samples
  std::vector<CoreUsage> cores;   // CPUs present in both samples with ticks in between
};

// Parses /proc/stat. Needs the aggregate "cpu" line with at least four columns; a line
// that is cut short, a non-numeric counter or a line that is not "key values..." is a parse
// error whose context names the line. Lines other than cpu*/procs_* are not interpreted.
[[nodiscard]] Result<CpuStat> parse_proc_stat(std::string_view text);

// Parses /proc/loadavg ("0.01 0.05 0.02 1/83 3393"). Empty or malformed text is an error.
[[nodiscard]] Result<LoadAvg> parse_loadavg(std::string_view text);

// Usage between two /proc/stat samples, from jiffy deltas (no wall time needed). A counter
// that went backwards contributes 0 to the interval (tickless kernels are known to step
// iowait back); equal samples give an absent usage. Cores are matched by index.
[[nodiscard]] CpuUsageSample compute_cpu_usage(const CpuStat& prev, const CpuStat& cur);

// Reads /proc/stat and /proc/loadavg through `fs`. A missing file is a kNotFound error.
[[nodiscard]] Result<CpuStat> collect_cpu_stat(const FileSystem& fs);
[[nodiscard]] Result<LoadAvg> collect_loadavg(const FileSystem& fs);

}  // namespace cardiac::host
