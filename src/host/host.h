// SPDX-License-Identifier: Apache-2.0
// One snapshot of every host reading, and the rates between two snapshots.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "host/cpu.h"
#include "host/disks.h"
#include "host/memory.h"
#include "host/mounts.h"
#include "host/network.h"
#include "host/pci.h"
#include "host/pressure.h"
#include "host/processes.h"
#include "host/system.h"
#include "platform/fs.h"

namespace cardiac::host {

// Raw readings at one instant. A part whose source is missing is absent (nullopt or
// empty); a part whose source exists but cannot be read or parsed is absent too and its
// error is in `errors` ("/proc/meminfo line 3: bad value for MemFree: 'x'").
struct HostSnapshot {
  TimeNs taken_at = 0;
  std::optional<CpuStat> cpu;
  std::optional<LoadAvg> load;
  std::optional<MemInfo> memory;
  Pressure pressure;
  std::vector<FilesystemUsage> filesystems;
  std::vector<DiskStat> disks;
  std::vector<NetDevice> nics;
  std::vector<DStateProcess> dstate_processes;
  SystemInfo system;
  std::optional<PciScan> pci;  // absent when /sys/bus/pci could not be listed
  std::vector<std::string> errors;
  // The collection did not finish within its deadline (see bounded.h); everything else in the
  // snapshot is then empty.
  bool timed_out = false;
};

// Derived values between two snapshots.
struct HostRates {
  double interval_s = 0;  // cur.taken_at - prev.taken_at
  CpuUsageSample cpu;     // from jiffies, so valid even when interval_s is not
  std::vector<DiskRates> disks;
  std::vector<NetRates> nics;
};

// Reads everything through `fs` and stamps the result with `now` (the caller's clock).
// Never fails as a whole; see HostSnapshot for how partial failures show. Blocking: it
// statvfs()es every data mount, which hangs on a dead NFS server, so run it on its own
// thread. Thread-safe as long as `fs` is.
[[nodiscard]] HostSnapshot collect_host(const FileSystem& fs, TimeNs now);

// CPU usage, disk and NIC rates between `prev` and `cur` (taken in that order). Disk and NIC
// rates are empty when the timestamps do not move forward or a side lacks the readings.
[[nodiscard]] HostRates compute_rates(const HostSnapshot& prev, const HostSnapshot& cur);

}  // namespace cardiac::host
