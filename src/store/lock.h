// SPDX-License-Identifier: Apache-2.0
// Who has the store open for writing: the agent holds a shared lock on "<db>-lock" while it
// runs, and `cardiac restore` takes it exclusively, so a restore never swaps the files under a
// running agent and an agent never starts on a store halfway through a restore.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"

namespace cardiac::store {

// An flock(2) on "<db>-lock", released when destroyed (or when the process dies, however it
// dies: the kernel drops it with the last descriptor).
class StoreLock {
 public:
  StoreLock(StoreLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StoreLock& operator=(StoreLock&& other) noexcept;
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;
  ~StoreLock();

 private:
  friend Result<std::optional<StoreLock>> try_lock_store(const std::string&, bool);
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// "<db>-lock".
[[nodiscard]] std::string store_lock_path(const std::string& db_path);

// Takes the lock of `db_path` without waiting: shared (the agent) or exclusive (a restore).
// nullopt when someone holds it in a conflicting way; errors (the file cannot be created or
// opened) name the lock file. The file is created owner-only (0600).
[[nodiscard]] Result<std::optional<StoreLock>> try_lock_store(const std::string& db_path,
                                                              bool exclusive);

}  // namespace cardiac::store
