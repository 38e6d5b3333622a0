// SPDX-License-Identifier: Apache-2.0
// The store's lock file: flock(2), so that a crashed holder never leaves a stale lock behind.
#include "store/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace cardiac::store {

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string store_lock_path(const std::string& db_path) {
  return db_path + "-lock";
}

Result<std::optional<StoreLock>> try_lock_store(const std::string& db_path, bool exclusive) {
  const std::string path = store_lock_path(db_path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail(Error::io(path, errno));
  StoreLock lock(fd);
  if (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::optional<StoreLock>();
    return fail(Error::io(path, errno));
  }
  return std::optional<StoreLock>(std::move(lock));
}

}  // namespace cardiac::store
