// SPDX-License-Identifier: Apache-2.0
// The rooted file-system seam: every read of /proc, /sys, /dev or a log file goes through it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cardiac {

// Capacity of a mounted file system, in bytes.
struct DiskSpace {
  std::uint64_t total = 0;
  std::uint64_t free = 0;       // free including root-reserved blocks
  std::uint64_t available = 0;  // free to unprivileged users
};

// Read-only view of a file system. Paths are absolute ("/proc/stat") and are resolved
// against the implementation's root. Implementations are safe to use from several threads.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Whole file, at most `max_bytes` (longer files are cut: /proc files are unbounded).
  [[nodiscard]] virtual Result<std::string> read_file(std::string_view path,
                                                      std::size_t max_bytes = 16u << 20) const = 0;
  // Entry names (no "." or ".."), unsorted.
  [[nodiscard]] virtual Result<std::vector<std::string>> list_dir(std::string_view path) const = 0;
  [[nodiscard]] virtual Result<std::string> read_link(std::string_view path) const = 0;
  [[nodiscard]] virtual bool exists(std::string_view path) const = 0;
  // Capacity of the file system mounted at `mount_point`.
  [[nodiscard]] virtual Result<DiskSpace> disk_space(std::string_view mount_point) const = 0;
  // The directory this view maps "/" to ("/" on a live machine).
  [[nodiscard]] virtual std::string root() const = 0;
};

// The real file system under `root`. With a root other than "/", disk_space() reads the
// captured table `<root>/.cardiac/statvfs` ("<mount> <total> <free> <available>" per line)
// because statvfs of a captured tree says nothing about the machine it came from.
class RootFs final : public FileSystem {
 public:
  explicit RootFs(std::string root = "/");
  [[nodiscard]] Result<std::string> read_file(std::string_view path,
                                              std::size_t max_bytes = 16u << 20) const override;
  [[nodiscard]] Result<std::vector<std::string>> list_dir(std::string_view path) const override;
  [[nodiscard]] Result<std::string> read_link(std::string_view path) const override;
  [[nodiscard]] bool exists(std::string_view path) const override;
  [[nodiscard]] Result<DiskSpace> disk_space(std::string_view mount_point) const override;
  [[nodiscard]] std::string root() const override { return root_; }

 private:
  [[nodiscard]] std::string resolve(std::string_view path) const;
  std::string root_;
  bool live_;
};

// In-memory file system for small unit tests. Not thread-safe while being filled.
class MemFs final : public FileSystem {
 public:
  void add_file(std::string path, std::string content);
  void add_link(std::string path, std::string target);
  void add_disk(std::string mount_point, DiskSpace space);
  [[nodiscard]] Result<std::string> read_file(std::string_view path,
                                              std::size_t max_bytes = 16u << 20) const override;
  [[nodiscard]] Result<std::vector<std::string>> list_dir(std::string_view path) const override;
  [[nodiscard]] Result<std::string> read_link(std::string_view path) const override;
  [[nodiscard]] bool exists(std::string_view path) const override;
  [[nodiscard]] Result<DiskSpace> disk_space(std::string_view mount_point) const override;
  [[nodiscard]] std::string root() const override { return "mem:"; }

 private:
  std::map<std::string, std::string, std::less<>> files_;
  std::map<std::string, std::string, std::less<>> links_;
  std::map<std::string, DiskSpace, std::less<>> disks_;
};

}  // namespace cardiac
