// SPDX-License-Identifier: Apache-2.0
// Per-GPU Xid counts fed from both the kernel log and NVML events, without double counting.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "kmsg/event.h"

namespace cardiac::kmsg {

enum class XidSource { kKernelLog, kNvml };

struct XidCount {
  std::string pci_bus_id;
  int xid = 0;
  std::uint64_t count = 0;
  TimeNs first_ns = 0;
  TimeNs last_ns = 0;
};

// Counts Xid occurrences per (bus id, xid). The same occurrence reported by the other source
// (kernel log vs NVML) within `window` is folded into the first report. Repeats from one
// source are all counted: the driver logs one line per occurrence (Xid 13 often several in
// the same second), and NVML delivers one event per occurrence. Not thread-safe.
class XidCounter {
 public:
  explicit XidCounter(DurationNs window = 5 * kNsPerSec) : window_(window) {}

  // Returns true when counted, false when folded into an earlier report from the other
  // source. `pci_bus_id` is normalised here, so NVML's "00000000:3B:00.0" matches the log.
  bool record(std::string_view pci_bus_id, int xid, TimeNs t, XidSource source);
  // Convenience for kernel-log events: non-"xid" events and events without time are ignored
  // (returns false); `fallback_ns` stands in when the line carried no time.
  bool record(const KernelEvent& event, TimeNs fallback_ns);

  [[nodiscard]] std::uint64_t count(std::string_view pci_bus_id, int xid) const;
  [[nodiscard]] std::uint64_t total() const { return total_; }
  [[nodiscard]] std::uint64_t duplicates() const { return duplicates_; }
  // All counts, ordered by bus id then xid.
  [[nodiscard]] std::vector<XidCount> counts() const;

 private:
  struct Seen {
    TimeNs t;
    XidSource source;
    bool matched;  // already paired with a report from the other source
  };
  struct Entry {
    XidCount count;
    std::deque<Seen> recent;  // counted reports inside the window, oldest first
  };

  DurationNs window_;
  std::map<std::pair<std::string, int>, Entry> entries_;
  std::uint64_t total_ = 0;
  std::uint64_t duplicates_ = 0;
};

}  // namespace cardiac::kmsg
