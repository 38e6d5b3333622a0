// SPDX-License-Identifier: Apache-2.0
// Block-device I/O counters (/proc/diskstats) and the rates between two samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

// Cumulative counters of one block device. Sectors are always 512 bytes in diskstats,
// whatever the device's sector size.
struct DiskStat {
  std::string name;
  unsigned major = 0;
  unsigned minor = 0;
  std::uint64_t reads = 0;  // completed
  std::uint64_t read_sectors = 0;
  std::uint64_t read_ms = 0;  // time spent by all reads
  std::uint64_t writes = 0;
  std::uint64_t write_sectors = 0;
  std::uint64_t write_ms = 0;
  std::uint64_t in_flight = 0;  // a gauge, not a counter
  std::uint64_t io_ms = 0;      // time with at least one I/O in flight
  std::uint64_t weighted_ms = 0;
};

struct DiskRates {
  std::string name;
  double read_bytes_per_s = 0;
  double write_bytes_per_s = 0;
  double read_iops = 0;
  double write_iops = 0;
  std::optional<double> await_ms;  // mean time per completed I/O; absent when none completed
  double util_percent = 0;         // busy time / interval, capped at 100
  std::uint64_t in_flight = 0;     // at the second sample
};

// Parses /proc/diskstats: "major minor name" then 11 counters (2.6), 15 (4.18, discards)
// or 17 (5.5, flushes). The 4-counter partition rows of kernels before 2.6.25 are skipped.
// Any other shape, or a non-numeric counter, is a parse error naming the line.
[[nodiscard]] Result<std::vector<DiskStat>> parse_diskstats(std::string_view text);

// Name rule for a whole disk when /sys/block cannot be listed: loop, ram, zram, fd and sr
// devices are dropped, and so are partitions ("sda1", "vdb2", "nvme0n1p1", "mmcblk0p1").
// Device-mapper ("dm-0") and md arrays stay: they are where the data file systems live.
[[nodiscard]] bool is_whole_disk(std::string_view name);

// Rates between two samples taken `seconds` apart, for devices present in both. A device
// whose counters went backwards (driver reload, 32-bit wrap) is left out rather than given
// a negative or made-up rate. Empty when `seconds` <= 0.
[[nodiscard]] std::vector<DiskRates> compute_disk_rates(const std::vector<DiskStat>& prev,
                                                        const std::vector<DiskStat>& cur,
                                                        double seconds);

// Reads /proc/diskstats through `fs` and keeps whole disks: names listed in /sys/block
// (minus loop/ram/zram) when that directory exists, else is_whole_disk(). A missing
// diskstats file is a kNotFound error.
[[nodiscard]] Result<std::vector<DiskStat>> collect_diskstats(const FileSystem& fs);

}  // namespace cardiac::host
