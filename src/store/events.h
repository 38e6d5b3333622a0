// SPDX-License-Identifier: Apache-2.0
// Event log: kernel-log lines and Xids, deduplicated by a caller-chosen key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/db.h"

namespace cardiac::store {

struct Event {
  std::int64_t id = 0;  // set by the store
  TimeNs time_ns = 0;
  std::string kind;  // "xid", "kmsg", ...
  std::optional<unsigned> gpu;
  std::string pci_bus_id;
  std::optional<std::int64_t> xid;
  std::string message;
  std::string source;  // "kmsg", "journal", "file:/var/log/kern.log"
  // Identifies the same occurrence seen twice (a re-read kernel log after a restart).
  std::string dedup_key;
};

// Inserts `e` unless an event with the same dedup_key exists. Returns true when it was new.
[[nodiscard]] Result<bool> insert_event(Db& db, const Event& e);

// Events with time_ns >= since, oldest first, at most `limit`.
[[nodiscard]] Result<std::vector<Event>> events_since(const Db& db, TimeNs since,
                                                      std::size_t limit = 1000);

struct EventCount {
  std::string kind;
  std::optional<std::int64_t> xid;
  std::int64_t count = 0;
};

// Number of events per (kind, xid) with time_ns >= since, ordered by kind then xid.
[[nodiscard]] Result<std::vector<EventCount>> count_events(const Db& db, TimeNs since);

}  // namespace cardiac::store
