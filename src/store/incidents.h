// SPDX-License-Identifier: Apache-2.0
// Incidents: a GPU fault's lifecycle, from the fault (the Xid line, the NVML state) through its
// detection, the queue's fence and what people did about it, to the GPU's return to service.
// One open incident per GPU at most. The card is named by serial and UUID, so its history
// follows it to another slot; the node by its hostname.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "nvml/gpu.h"
#include "store/db.h"

namespace cardiac::store {

// What a person did about an incident (`cardiac incident remediate`).
enum class RemediationAction { kReset, kReboot, kReseat, kReplace, kRma };
std::string_view remediation_action_name(RemediationAction a);  // "reset", "reboot", ...
[[nodiscard]] Result<RemediationAction> remediation_action_from_name(std::string_view name);

struct Remediation {
  RemediationAction action = RemediationAction::kReset;
  std::string note;
  std::string who;  // the user the agent's socket saw (SO_PEERCRED), never what a caller wrote
  TimeNs at_ns = 0;
};

struct Incident {
  std::int64_t id = 0;
  unsigned gpu = 0;
  std::string uuid;
  std::string pci_bus_id;
  // The device health that opened it: lost, unresponsive, reset required or error (a fencing
  // Xid or an ECC fault is "error"; `cause` says which). Stored as nvml::device_health_name.
  nvml::DeviceHealth kind = nvml::DeviceHealth::kError;
  // The fault's time: the Xid line's, or the sample that first showed the NVML state.
  TimeNs started_ns = 0;
  // The return to service: the GPU healthy again, or, when the queue fenced it, its fence
  // cleared. Unset while open.
  std::optional<TimeNs> ended_ns;
  std::string evidence;
  // Added with schema 8; empty or unset in rows from before.
  // Each with a default member initializer, so that positional initializers of the first eight
  // fields stay complete.
  std::string serial{};
  std::string hostname{};
  std::string cause{};                      // "health_lost", "xid_79", "fence: <reason>", ...
  std::optional<TimeNs> detected_ns{};      // when cardiac saw it
  std::optional<TimeNs> fenced_ns{};        // when the queue fenced the GPU, if it did
  std::string returned_by{};                // "health ok", or who cleared the fence
  std::vector<Remediation> remediations{};  // oldest first (read back, not written by open)

  // The card: its serial when known, else its UUID, else its slot.
  [[nodiscard]] std::string card() const;
};

// Who ended an incident that ended because the GPU answered normally again (no fence).
inline constexpr std::string_view kReturnedByHealth = "health ok";

// Opens an incident for `i.gpu` unless one is open; returns true when a new one was opened.
[[nodiscard]] Result<bool> open_incident(Db& db, const Incident& i);
// Ends the open incident of `gpu`, if any; returns true when one was ended.
[[nodiscard]] Result<bool> close_incident(Db& db, unsigned gpu, TimeNs at,
                                          std::string_view returned_by = kReturnedByHealth);
// Records the queue's fence on the open incident of `gpu` (the first fence only); returns true
// when one was marked.
[[nodiscard]] Result<bool> mark_incident_fenced(Db& db, unsigned gpu, TimeNs at);
// A fence laid while `gpu`'s incident was open, whose notice reached the store only after
// the card answered again and the incident had ended (kReturnedByHealth, at or after `fence_at`):
// that incident is opened again, so that the fence's clear ends it rather than a second
// incident being opened for the same fault. Returns its id, or nullopt when there is no such
// incident (or one is open).
[[nodiscard]] Result<std::optional<std::int64_t>> reopen_for_fence(Db& db, unsigned gpu,
                                                                   TimeNs fence_at);
// The open incident of `gpu`, if any.
[[nodiscard]] Result<std::optional<Incident>> open_incident_of(const Db& db, unsigned gpu);
// Incidents that started at or after `since` or are still open, newest first, with their
// remediations.
[[nodiscard]] Result<std::vector<Incident>> incidents_since(const Db& db, TimeNs since);
// One incident by id; kNotFound names the id.
[[nodiscard]] Result<Incident> incident_by_id(const Db& db, std::int64_t id);
// Appends a remediation to incident `id`; kNotFound when there is no such incident.
[[nodiscard]] Status add_remediation(Db& db, std::int64_t id, const Remediation& r);

}  // namespace cardiac::store
