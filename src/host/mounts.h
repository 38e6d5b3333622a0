// SPDX-License-Identifier: Apache-2.0
// Mounted file systems that hold data (/proc/self/mounts) and their capacity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

struct MountEntry {
  std::string device;       // "/dev/nvme0n1p2", "server:/export", "tank/data"
  std::string mount_point;  // octal escapes (\040 for a space) decoded
  std::string fs_type;
  std::string options;
};

struct FilesystemUsage {
  std::string mount_point;
  std::string device;
  std::string fs_type;
  bool network = false;  // NFS, Lustre, GPFS, ...: capacity is the server's
  // Bytes; absent when statvfs failed or, for a captured tree, no capacity was captured.
  std::optional<std::uint64_t> total;
  std::optional<std::uint64_t> free;
  std::optional<std::uint64_t> available;
};

// Parses /proc/self/mounts (fstab format: device, mount point, type, options, 0, 0). A line
// with fewer than four fields is a parse error naming the line; empty text is no mounts.
[[nodiscard]] Result<std::vector<MountEntry>> parse_mounts(std::string_view text);

// df's Use%: used / (used + available), so blocks reserved for root count as full. Absent when
// the capacity is unknown.
[[nodiscard]] std::optional<double> used_percent(const FilesystemUsage& f);

// True for file systems that store data on a disk or a storage server: an allow-list of
// local block file systems (ext2/3/4, xfs, btrfs, zfs, f2fs, vfat, exfat, ntfs, ...) and
// shared/network ones (nfs, nfs4, cifs, lustre, gpfs, beegfs, ceph, wekafs, ...).
// Everything else — proc, sysfs, tmpfs, devtmpfs, overlay, cgroup, squashfs, fuse helpers —
// is virtual, in RAM or a read-only image whose capacity means nothing to an operator.
[[nodiscard]] bool is_data_filesystem(std::string_view fs_type);
[[nodiscard]] bool is_network_filesystem(std::string_view fs_type);

// Keeps data file systems (is_data_filesystem), one entry per device (its first mount
// point: later ones are bind mounts showing the same capacity) and per mount point (the
// last mount wins, as it hides the ones below). Order is that of `mounts`.
[[nodiscard]] std::vector<MountEntry> select_data_mounts(const std::vector<MountEntry>& mounts);

// Reads /proc/self/mounts (falling back to /proc/mounts), selects data mounts and asks
// fs.disk_space() for each. A mount whose capacity cannot be read stays in the list with
// absent sizes. Note that statvfs of a hung NFS server blocks: run this off the main thread.
// A missing mounts file is a kNotFound error.
[[nodiscard]] Result<std::vector<FilesystemUsage>> collect_filesystems(const FileSystem& fs);

}  // namespace cardiac::host
