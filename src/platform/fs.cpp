// SPDX-License-Identifier: Apache-2.0
// RootFs and MemFs.
#include "platform/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "core/strings.h"

namespace cardiac {

RootFs::RootFs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
  live_ = root_ == "/";
}

std::string RootFs::resolve(std::string_view path) const {
  if (live_) return std::string(path);
  std::string out = root_;
  if (!path.starts_with('/')) out += '/';
  out += path;
  return out;
}

Result<std::string> RootFs::read_file(std::string_view path, std::size_t max_bytes) const {
  std::string full = resolve(path);
  int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(Error::io(full, errno));
  std::string out;
  char buf[8192];
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, std::min(sizeof(buf), max_bytes - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      return fail(Error::io(full, saved));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<std::vector<std::string>> RootFs::list_dir(std::string_view path) const {
  std::string full = resolve(path);
  DIR* dir = ::opendir(full.c_str());
  if (!dir) return fail(Error::io(full, errno));
  std::vector<std::string> out;
  while (dirent* ent = ::readdir(dir)) {
    std::string_view name = ent->d_name;
    if (name == "." || name == "..") continue;
    out.emplace_back(name);
  }
  ::closedir(dir);
  return out;
}

Result<std::string> RootFs::read_link(std::string_view path) const {
  std::string full = resolve(path);
  char buf[4096];
  ssize_t n = ::readlink(full.c_str(), buf, sizeof(buf));
  if (n < 0) return fail(Error::io(full, errno));
  return std::string(buf, static_cast<size_t>(n));
}

bool RootFs::exists(std::string_view path) const {
  struct stat st {};
  return ::stat(resolve(path).c_str(), &st) == 0;
}

Result<DiskSpace> RootFs::disk_space(std::string_view mount_point) const {
  if (live_) {
    struct statvfs st {};
    std::string mp(mount_point);
    if (::statvfs(mp.c_str(), &st) != 0) return fail(Error::io(mp, errno));
    return DiskSpace{static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize,
                     static_cast<std::uint64_t>(st.f_bfree) * st.f_frsize,
                     static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize};
  }
  auto table = read_file("/.cardiac/statvfs");
  if (!table) return fail(table.error());
  for (std::string_view line : split_lines(*table)) {
    auto f = split_ws(line);
    if (f.size() != 4 || f[0] != mount_point) continue;
    auto total = parse_u64(f[1]);
    auto free = parse_u64(f[2]);
    auto avail = parse_u64(f[3]);
    if (!total || !free || !avail) {
      return fail(Error::parse("malformed statvfs line", resolve("/.cardiac/statvfs")));
    }
    return DiskSpace{*total, *free, *avail};
  }
  return fail(Error::not_found("no captured capacity for " + std::string(mount_point),
                               resolve("/.cardiac/statvfs")));
}

void MemFs::add_file(std::string path, std::string content) {
  files_[std::move(path)] = std::move(content);
}
void MemFs::add_link(std::string path, std::string target) {
  links_[std::move(path)] = std::move(target);
}
void MemFs::add_disk(std::string mount_point, DiskSpace space) {
  disks_[std::move(mount_point)] = space;
}

Result<std::string> MemFs::read_file(std::string_view path, std::size_t max_bytes) const {
  auto it = files_.find(path);
  if (it == files_.end()) return fail(Error::io(path, ENOENT));
  return it->second.substr(0, max_bytes);
}

Result<std::vector<std::string>> MemFs::list_dir(std::string_view path) const {
  std::string prefix(path);
  if (!prefix.ends_with('/')) prefix += '/';
  std::set<std::string> names;
  auto collect = [&](const auto& map) {
    for (const auto& [p, _] : map) {
      if (!std::string_view(p).starts_with(prefix)) continue;
      std::string_view rest = std::string_view(p).substr(prefix.size());
      names.emplace(rest.substr(0, rest.find('/')));
    }
  };
  collect(files_);
  collect(links_);
  if (names.empty()) return fail(Error::io(path, ENOENT));
  return std::vector<std::string>(names.begin(), names.end());
}

Result<std::string> MemFs::read_link(std::string_view path) const {
  auto it = links_.find(path);
  if (it == links_.end()) return fail(Error::io(path, ENOENT));
  return it->second;
}

bool MemFs::exists(std::string_view path) const {
  if (files_.count(path) || links_.count(path)) return true;
  return list_dir(path).has_value();
}

Result<DiskSpace> MemFs::disk_space(std::string_view mount_point) const {
  auto it = disks_.find(mount_point);
  if (it == disks_.end()) return fail(Error::io(mount_point, ENOENT));
  return it->second;
}

}  // namespace cardiac
