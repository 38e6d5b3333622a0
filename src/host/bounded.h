// SPDX-License-Identifier: Apache-2.0
// Host collection with a deadline: statvfs of a dead NFS server, or /proc/<pid>/cmdline of a
// process whose memory map is locked, can block for minutes, and `cardiac status` must not.
#pragma once

#include <memory>
#include <optional>

#include "host/host.h"

namespace cardiac::host {

// Runs collect_host on its own thread and waits at most `deadline` (real time). On time-out
// returns nullopt and leaves the thread to finish on its own; `fs` is shared so it outlives
// the caller. Thread-safe.
[[nodiscard]] std::optional<HostSnapshot> collect_host_within(std::shared_ptr<const FileSystem> fs,
                                                              TimeNs now, DurationNs deadline);

}  // namespace cardiac::host
