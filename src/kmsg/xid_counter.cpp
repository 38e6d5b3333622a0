// SPDX-License-Identifier: Apache-2.0
// Xid counting with cross-source de-duplication inside a time window.
#include "kmsg/xid_counter.h"

#include <cstdlib>

namespace cardiac::kmsg {

bool XidCounter::record(std::string_view pci_bus_id, int xid, TimeNs t, XidSource source) {
  std::string bus = normalize_kernel_bus_id(pci_bus_id);
  if (bus.empty()) bus = std::string(pci_bus_id);  // keep odd ids apart rather than drop them
  Entry& e = entries_[{bus, xid}];
  // Forget reports that can no longer pair: sources may deliver out of order, hence 2x.
  while (!e.recent.empty() && e.recent.front().t < t - 2 * window_) e.recent.pop_front();
  for (Seen& s : e.recent) {
    if (s.source != source && !s.matched && std::llabs(s.t - t) <= window_) {
      s.matched = true;
      ++duplicates_;
      return false;
    }
  }
  e.recent.push_back({t, source, false});
  if (e.recent.size() > 1024) e.recent.pop_front();  // an Xid storm must not grow memory
  if (e.count.count == 0) {
    e.count.pci_bus_id = bus;
    e.count.xid = xid;
    e.count.first_ns = t;
    e.count.last_ns = t;
  }
  ++e.count.count;
  if (t < e.count.first_ns) e.count.first_ns = t;
  if (t > e.count.last_ns) e.count.last_ns = t;
  ++total_;
  return true;
}

bool XidCounter::record(const KernelEvent& event, TimeNs fallback_ns) {
  if (event.kind != EventKind::kXid || !event.xid) return false;
  return record(event.pci_bus_id, *event.xid, event.time_ns.value_or(fallback_ns),
                XidSource::kKernelLog);
}

std::uint64_t XidCounter::count(std::string_view pci_bus_id, int xid) const {
  std::string bus = normalize_kernel_bus_id(pci_bus_id);
  if (bus.empty()) bus = std::string(pci_bus_id);
  auto it = entries_.find({bus, xid});
  return it == entries_.end() ? 0 : it->second.count.count;
}

std::vector<XidCount> XidCounter::counts() const {
  std::vector<XidCount> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) out.push_back(e.count);
  return out;
}

}  // namespace cardiac::kmsg
