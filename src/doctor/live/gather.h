// SPDX-License-Identifier: Apache-2.0
// Gathers a DoctorInput from the live machine or from captured data: GPU samples through the
// isolated NVML worker, host snapshots (or a captured series t0/, t1/, …), per-thread CPU of
// the processes that hold GPUs, the kernel log, network probes and an agent store's history.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "doctor/input.h"

namespace cardiac::doctor {

struct GatherOptions {
  bool offline = false;    // no live NVML, no probes, no live kernel log
  std::string root = "/";  // host tree, or a directory of snapshots t0/, t1/, …
  std::string nvml_lib;    // empty: the default search order
  DurationNs nvml_timeout = 5 * kNsPerSec;
  DurationNs window = 10 * kNsPerSec;      // live sampling window when there is no history
  DurationNs sample_interval = kNsPerSec;  // between samples inside the window
  std::string kmsg_file;                   // a kernel log to read instead of the live one
  bool no_kmsg = false;
  int year_hint = 0;                         // for year-less syslog stamps; 0 = this year
  std::string db;                            // agent store for history ("" = none)
  DurationNs history = 10 * 60 * kNsPerSec;  // how far back to read the store's samples
  std::vector<std::string> probe_targets;
  // The near target: empty = the default gateway from /proc/net/route, "none" = no near target.
  std::string gateway;
  bool no_probe = false;
  DoctorConfig config;
  std::string executable;  // the cardiac binary for the NVML worker (default: ourselves)
  // Inference engines' /metrics ([serving] engines), read at the start and the end of the
  // window; not with --offline.
  std::vector<std::string> engines;
  DurationNs engine_timeout = 2 * kNsPerSec;
};

// Reports progress of a long gather: a stage name and the fraction of the window done.
using Progress = std::function<void(std::string_view stage, double fraction)>;
// Waits `d`; tests pass one that advances a ManualClock.
using Sleeper = std::function<void(DurationNs d)>;

// Never fails for a missing part (no NVML, unreadable kernel log, no gateway): that becomes a
// "skipped" note or a finding. Fails for bad input the user named: a --root that does not
// exist or is not a host tree (kNotFound / kInvalidArgument), a --kmsg file that cannot be
// read, a --db that is not a cardiac store; and with kPermission or kIo for a --root that is
// there but cannot be read. The network probes run on their own thread during the sampling
// window and the kernel-log read, and are joined before returning; `progress` is only ever
// called on the caller's thread.
Result<DoctorInput> gather(const GatherOptions& o, const Clock& clock, const Sleeper& sleep,
                           const Progress& progress, std::vector<std::string>& skipped);

// A captured snapshot series: DIR/t0, DIR/t1, … each a host tree, stamped by
// .cardiac/taken_at (ns since the epoch) or one second apart. Empty when DIR is not one.
std::vector<std::string> snapshot_series(const std::string& dir);

// CPU use of `pids` and their threads between two host trees `dt_s` seconds apart.
std::vector<ProcessActivity> process_activity(const FileSystem& before, const FileSystem& after,
                                              const std::vector<std::uint32_t>& pids, double dt_s);

}  // namespace cardiac::doctor
