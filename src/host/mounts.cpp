// SPDX-License-Identifier: Apache-2.0
// /proc/self/mounts reader and capacity per data file system.
#include "host/mounts.h"

#include <algorithm>
#include <iterator>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

constexpr std::string_view kLocalFs[] = {"ext2", "ext3",  "ext4",     "xfs",    "btrfs",  "zfs",
                                         "f2fs", "jfs",   "reiserfs", "vfat",   "msdos",  "exfat",
                                         "ntfs", "ntfs3", "bcachefs", "nilfs2", "fuseblk"};
// Shared storage that training data and checkpoints commonly live on.
constexpr std::string_view kNetworkFs[] = {
    "nfs",  "nfs4",      "cifs",   "smb3",           "lustre",    "gpfs",        "beegfs",
    "ceph", "glusterfs", "wekafs", "fuse.glusterfs", "fuse.ceph", "fuse.juicefs"};

// The kernel escapes space, tab, newline and backslash in mount fields as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool octal = s[i] == '\\' && i + 3 < s.size() &&
                       std::all_of(s.begin() + i + 1, s.begin() + i + 4,
                                   [](char c) { return c >= '0' && c <= '7'; });
    if (octal) {
      out +=
          static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += s[i];
  }
  return out;
}

}  // namespace

bool is_network_filesystem(std::string_view fs_type) {
  return std::find(std::begin(kNetworkFs), std::end(kNetworkFs), fs_type) != std::end(kNetworkFs);
}

bool is_data_filesystem(std::string_view fs_type) {
  return is_network_filesystem(fs_type) ||
         std::find(std::begin(kLocalFs), std::end(kLocalFs), fs_type) != std::end(kLocalFs);
}

Result<std::vector<MountEntry>> parse_mounts(std::string_view text) {
  std::vector<MountEntry> out;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto f = split_ws(lines[i]);
    if (f.empty()) continue;
    if (f.size() < 4 || !f[1].starts_with('/')) {
      return fail(detail::line_error(
          i + 1, fmt::format("expected 'device mountpoint type options', got '{}'",
                             detail::excerpt(lines[i]))));
    }
    out.push_back(MountEntry{unescape(f[0]), unescape(f[1]), std::string(f[2]), std::string(f[3])});
  }
  return out;
}

std::vector<MountEntry> select_data_mounts(const std::vector<MountEntry>& mounts) {
  std::vector<MountEntry> out;
  for (const MountEntry& m : mounts) {
    if (!is_data_filesystem(m.fs_type)) continue;
    auto same_point = std::find_if(out.begin(), out.end(), [&](const MountEntry& o) {
      return o.mount_point == m.mount_point;
    });
    if (same_point != out.end()) {
      *same_point = m;
      continue;
    }
    const bool same_device = std::any_of(out.begin(), out.end(),
                                         [&](const MountEntry& o) { return o.device == m.device; });
    if (!same_device) out.push_back(m);
  }
  return out;
}

Result<std::vector<FilesystemUsage>> collect_filesystems(const FileSystem& fs) {
  auto mounts = detail::read_and_parse(fs, "/proc/self/mounts", parse_mounts);
  if (!mounts && detail::is_missing(mounts.error())) {
    mounts = detail::read_and_parse(fs, "/proc/mounts", parse_mounts);
  }
  if (!mounts) return fail(mounts.error());
  std::vector<FilesystemUsage> out;
  for (const MountEntry& m : select_data_mounts(*mounts)) {
    FilesystemUsage u{m.mount_point, m.device,     m.fs_type,   is_network_filesystem(m.fs_type),
                      std::nullopt,  std::nullopt, std::nullopt};
    if (auto space = fs.disk_space(m.mount_point)) {
      u.total = space->total;
      u.free = space->free;
      u.available = space->available;
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::optional<double> used_percent(const FilesystemUsage& f) {
  if (!f.total || !f.free || !f.available || *f.total < *f.free) return std::nullopt;
  const double used = static_cast<double>(*f.total - *f.free);
  const double denom = used + static_cast<double>(*f.available);
  if (denom <= 0) return std::nullopt;
  return used / denom * 100.0;
}

}  // namespace cardiac::host
