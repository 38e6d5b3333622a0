// SPDX-License-Identifier: Apache-2.0
// Host collection with a deadline: statvfs of a dead NFS server, or /proc/<pid>/cmdline of a
// process whose memory map is locked, can block for minutes, and neither `cardiac status` nor
// the agent's sampling may.
#pragma once

#include <memory>
#include <optional>

#include "host/host.h"

namespace cardiac::host {

// Collects on a thread of its own, started at the first collect() and kept for the next ones:
// the agent reads the host every few seconds, and a thread made per read cost more than
// several of the files it reads. The thread is detached and shares its state, so neither a
// read that never returns nor the reader's destruction holds the caller. Thread-safe.
class HostReader {
 public:
  explicit HostReader(std::shared_ptr<const FileSystem> fs);
  ~HostReader();
  HostReader(const HostReader&) = delete;
  HostReader& operator=(const HostReader&) = delete;

  // collect_host(fs, now), waiting at most `deadline` (real time); nullopt when it did not
  // finish by then. While a read that missed its deadline still blocks, later calls return
  // nullopt at once rather than queue behind it or start another thread beside it; the stuck
  // read's snapshot, when it comes, is dropped as stale.
  [[nodiscard]] std::optional<HostSnapshot> collect(TimeNs now, DurationNs deadline);
  // How many reads the thread has started (tests).
  [[nodiscard]] std::uint64_t reads() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> s_;
};

// One bounded collection: a HostReader used once.
[[nodiscard]] std::optional<HostSnapshot> collect_host_within(std::shared_ptr<const FileSystem> fs,
                                                              TimeNs now, DurationNs deadline);

}  // namespace cardiac::host
