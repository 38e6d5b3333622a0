// SPDX-License-Identifier: Apache-2.0
// Incidents: spans of time during which a GPU was faulty (lost, hung, needing a reset), with
// the evidence that opened them. One open incident per GPU at most.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "nvml/gpu.h"
#include "store/db.h"

namespace cardiac::store {

struct Incident {
  std::int64_t id = 0;
  unsigned gpu = 0;
  std::string uuid;
  std::string pci_bus_id;
  // The device health that opened it: lost, unresponsive, reset required or error. Stored and
  // shown as nvml::device_health_name.
  nvml::DeviceHealth kind = nvml::DeviceHealth::kError;
  TimeNs started_ns = 0;
  std::optional<TimeNs> ended_ns;
  std::string evidence;
};

// Opens an incident for `i.gpu` unless one is open; returns true when a new one was opened.
[[nodiscard]] Result<bool> open_incident(Db& db, const Incident& i);
// Ends the open incident of `gpu`, if any; returns true when one was ended.
[[nodiscard]] Result<bool> close_incident(Db& db, unsigned gpu, TimeNs at);
// Incidents that started at or after `since` or are still open, newest first.
[[nodiscard]] Result<std::vector<Incident>> incidents_since(const Db& db, TimeNs since);

}  // namespace cardiac::store
