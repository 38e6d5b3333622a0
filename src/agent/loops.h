// SPDX-License-Identifier: Apache-2.0
// The agent's other threads, each on its own schedule so a slow source never delays another:
// host collection, the kernel log, NVML events and store maintenance. Each gets exactly the
// parts it uses and returns when `stop` is set.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/parts.h"
#include "config/config.h"
#include "core/clock.h"
#include "host/bounded.h"
#include "kmsg/reader.h"
#include "platform/fs.h"

namespace cardiac::agent {

// One host reading within `timeout` (a late one is a snapshot marked timed out), with rates
// against `previous`, which it then replaces.
HostView read_host(host::HostReader& reader, std::optional<host::HostSnapshot>& previous,
                   TimeNs now, DurationNs timeout);

// Reads the host every `interval` into `out`, at most `timeout` per read (a late read is
// published as timed out).
void run_host(host::HostReader& reader, Latest<HostView>& out, DurationNs interval,
              DurationNs timeout, const Clock& clock, Stopper& stop);

// How often an open kernel log (/dev/kmsg or a file) is read for new lines: the sampling
// interval, within [250 ms, 1 s]. The sampler takes what was read once per sample, so reading
// more often than that only costs wake-ups (three a second at 1 s sampling, when this was a
// fixed 250 ms).
DurationNs kernel_log_poll_period(DurationNs sampling_interval);

// Follows the configured kernel log ([kmsg] source: /dev/kmsg, a file, or "journal"), hands
// classified events to `inbox` and says in `status` whether the log is read; an open log is
// read every `poll_period`.
class KernelLogFollower {
 public:
  KernelLogFollower(std::string source, const Clock& clock,
                    DurationNs poll_period = 250 * kNsPerMs);
  // Positions the readers at the end of the log, so that "lines written after the agent
  // started" means after this returned; sets `status` for the first sample.
  void open_at_end(KmsgStatus& status);
  void run(Inbox& inbox, KmsgStatus& status, Stopper& stop);

 private:
  std::string source_;
  const Clock& clock_;
  DurationNs poll_period_;
  std::unique_ptr<kmsg::KmsgReader> kmsg_reader_;
  std::unique_ptr<kmsg::FileTailReader> file_reader_;
  bool open_ = false;
};

// Roll-ups and retention on its own connection, every minute.
void run_maintenance(const config::Config& c, const Clock& clock, Stopper& stop);

}  // namespace cardiac::agent
