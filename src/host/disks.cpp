// SPDX-License-Identifier: Apache-2.0
// /proc/diskstats reader and disk I/O rates.
#include "host/disks.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

constexpr double kSectorBytes = 512.0;

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool is_virtual_ram_or_loop(std::string_view name) {
  return name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram");
}

// "nvme0n1p1", "mmcblk0p2", "md0p1": a 'p' then digits, right after a digit.
bool has_p_partition_suffix(std::string_view name) {
  std::size_t i = name.size();
  while (i > 0 && is_digit(name[i - 1])) --i;
  return i < name.size() && i >= 2 && name[i - 1] == 'p' && is_digit(name[i - 2]);
}

Result<DiskStat> parse_row(const std::vector<std::string_view>& f, std::size_t line) {
  DiskStat d;
  auto major = parse_u64(f[0]);
  auto minor = parse_u64(f[1]);
  if (!major || !minor || *major > 0xfffff || *minor > 0xfffff) {
    return fail(
        line_error(line, fmt::format("bad device numbers '{} {}'", excerpt(f[0]), excerpt(f[1]))));
  }
  d.major = static_cast<unsigned>(*major);
  d.minor = static_cast<unsigned>(*minor);
  d.name = std::string(f[2]);
  std::uint64_t v[11] = {};
  for (std::size_t i = 3; i < f.size(); ++i) {
    auto n = parse_u64(f[i]);
    if (!n) return fail(line_error(line, fmt::format("bad counter '{}'", excerpt(f[i]))));
    if (i - 3 < 11) v[i - 3] = *n;
  }
  // Column order: reads, reads merged, sectors read, ms reading, writes, writes merged,
  // sectors written, ms writing, in flight, ms doing I/O, weighted ms.
  d.reads = v[0];
  d.read_sectors = v[2];
  d.read_ms = v[3];
  d.writes = v[4];
  d.write_sectors = v[6];
  d.write_ms = v[7];
  d.in_flight = v[8];
  d.io_ms = v[9];
  d.weighted_ms = v[10];
  return d;
}

std::optional<DiskRates> rates_between(const DiskStat& a, const DiskStat& b, double seconds) {
  const bool backwards = b.reads < a.reads || b.read_sectors < a.read_sectors ||
                         b.read_ms < a.read_ms || b.writes < a.writes ||
                         b.write_sectors < a.write_sectors || b.write_ms < a.write_ms ||
                         b.io_ms < a.io_ms;
  if (backwards) return std::nullopt;
  DiskRates r;
  r.name = b.name;
  const auto ios = static_cast<double>((b.reads - a.reads) + (b.writes - a.writes));
  r.read_bytes_per_s =
      static_cast<double>(b.read_sectors - a.read_sectors) * kSectorBytes / seconds;
  r.write_bytes_per_s =
      static_cast<double>(b.write_sectors - a.write_sectors) * kSectorBytes / seconds;
  r.read_iops = static_cast<double>(b.reads - a.reads) / seconds;
  r.write_iops = static_cast<double>(b.writes - a.writes) / seconds;
  if (ios > 0) {
    r.await_ms = static_cast<double>((b.read_ms - a.read_ms) + (b.write_ms - a.write_ms)) / ios;
  }
  r.util_percent =
      std::min(100.0, static_cast<double>(b.io_ms - a.io_ms) / (seconds * 1000.0) * 100.0);
  r.in_flight = b.in_flight;
  return r;
}

}  // namespace

Result<std::vector<DiskStat>> parse_diskstats(std::string_view text) {
  std::vector<DiskStat> out;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto f = split_ws(lines[i]);
    if (f.empty()) continue;
    constexpr std::size_t kOldPartitionFields = 3 + 4;
    if (f.size() == kOldPartitionFields) continue;
    if (f.size() < 3 + 11) {
      return fail(line_error(i + 1, fmt::format("expected at least 14 fields, got {}: '{}'",
                                                f.size(), excerpt(lines[i]))));
    }
    auto d = parse_row(f, i + 1);
    if (!d) return fail(d.error());
    out.push_back(std::move(*d));
  }
  return out;
}

bool is_whole_disk(std::string_view name) {
  if (name.empty() || is_virtual_ram_or_loop(name)) return false;
  if (name.starts_with("fd") || name.starts_with("sr")) return false;
  if (has_p_partition_suffix(name)) return false;
  for (std::string_view prefix : {"sd", "vd", "xvd", "hd"}) {
    if (name.starts_with(prefix) && is_digit(name.back())) return false;
  }
  return true;
}

std::vector<DiskRates> compute_disk_rates(const std::vector<DiskStat>& prev,
                                          const std::vector<DiskStat>& cur, double seconds) {
  std::vector<DiskRates> out;
  if (!(seconds > 0)) return out;
  for (const DiskStat& c : cur) {
    auto p =
        std::find_if(prev.begin(), prev.end(), [&](const DiskStat& d) { return d.name == c.name; });
    if (p == prev.end()) continue;
    if (auto r = rates_between(*p, c, seconds)) out.push_back(std::move(*r));
  }
  return out;
}

Result<std::vector<DiskStat>> collect_diskstats(const FileSystem& fs) {
  auto all = detail::read_and_parse(fs, "/proc/diskstats", parse_diskstats);
  if (!all) return fail(all.error());
  std::optional<std::set<std::string, std::less<>>> sys_block;
  if (auto names = fs.list_dir("/sys/block")) sys_block.emplace(names->begin(), names->end());
  std::vector<DiskStat> out;
  for (DiskStat& d : *all) {
    bool keep = false;
    if (sys_block) {
      // sysfs spells the '/' of "cciss/c0d0" as '!'.
      std::string sys_name = d.name;
      std::replace(sys_name.begin(), sys_name.end(), '/', '!');
      keep = sys_block->count(sys_name) > 0 && !is_virtual_ram_or_loop(d.name);
    } else {
      keep = is_whole_disk(d.name);
    }
    if (keep) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace cardiac::host
