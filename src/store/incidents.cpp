// SPDX-License-Identifier: Apache-2.0
// Incident rows and their remediations.
#include "store/incidents.h"

#include <array>
#include <map>
#include <utility>

#include "core/format.h"
#include "nvml/gpu_json.h"

namespace cardiac::store {
namespace {

constexpr std::array<std::pair<RemediationAction, std::string_view>, 5> kActions = {{
    {RemediationAction::kReset, "reset"},
    {RemediationAction::kReboot, "reboot"},
    {RemediationAction::kReseat, "reseat"},
    {RemediationAction::kReplace, "replace"},
    {RemediationAction::kRma, "rma"},
}};

constexpr std::string_view kColumns =
    "id, gpu, uuid, pci_bus_id, kind, started_ns, ended_ns, evidence, serial, hostname, cause, "
    "detected_ns, fenced_ns, returned_by";

Result<std::vector<Incident>> read_rows(Statement& st) {
  std::vector<Incident> out;
  while (true) {
    auto row = st.step();
    if (!row) return fail(row.error());
    if (!*row) break;
    Incident i;
    i.id = st.column_int64(0);
    i.gpu = static_cast<unsigned>(st.column_int64(1));
    i.uuid = st.column_text(2);
    i.pci_bus_id = st.column_text(3);
    auto kind = nvml::device_health_from_name(st.column_text(4));
    if (!kind) return fail(kind.error().with_context(fmt::format("incident {}", i.id)));
    i.kind = *kind;
    i.started_ns = st.column_int64(5);
    i.ended_ns = st.column_opt_int64(6);
    i.evidence = st.column_text(7);
    i.serial = st.column_text(8);
    i.hostname = st.column_text(9);
    i.cause = st.column_text(10);
    i.detected_ns = st.column_opt_int64(11);
    i.fenced_ns = st.column_opt_int64(12);
    i.returned_by = st.column_text(13);
    out.push_back(std::move(i));
  }
  return out;
}

// Every remediation of the listed incidents, oldest first; one query for the whole list.
Status read_remediations(const Db& db, std::vector<Incident>& list) {
  if (list.empty()) return {};
  std::map<std::int64_t, Incident*> by_id;
  std::int64_t lowest = list.front().id;
  for (auto& i : list) {
    by_id[i.id] = &i;
    lowest = std::min(lowest, i.id);
  }
  auto st = db.prepare(
      "SELECT incident_id, action, note, who, at_ns FROM incident_remediations "
      "WHERE incident_id >= ? ORDER BY at_ns, id");
  if (!st) return fail(st.error());
  st->bind_all(lowest);
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    auto it = by_id.find(st->column_int64(0));
    if (it == by_id.end()) continue;
    auto action = remediation_action_from_name(st->column_text(1));
    if (!action) return fail(action.error().with_context(fmt::format("incident {}", it->first)));
    it->second->remediations.push_back(
        {*action, st->column_text(2), st->column_text(3), st->column_int64(4)});
  }
  return {};
}

}  // namespace

std::string_view remediation_action_name(RemediationAction a) {
  for (const auto& [action, name] : kActions) {
    if (action == a) return name;
  }
  return "unknown";
}

Result<RemediationAction> remediation_action_from_name(std::string_view name) {
  for (const auto& [action, n] : kActions) {
    if (n == name) return action;
  }
  return fail(Error::invalid(fmt::format(
      "unknown remediation \"{}\" (one of reset, reboot, reseat, replace, rma)", name)));
}

std::string Incident::card() const {
  if (!serial.empty()) return "serial " + serial;
  if (!uuid.empty()) return uuid;
  return fmt::format("GPU {} ({})", gpu, pci_bus_id);
}

Result<bool> open_incident(Db& db, const Incident& i) {
  auto st = db.prepare(
      "INSERT OR IGNORE INTO incidents(gpu, uuid, pci_bus_id, kind, started_ns, evidence, "
      "serial, hostname, cause, detected_ns, fenced_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return fail(st.error());
  st->bind_all(static_cast<std::int64_t>(i.gpu), i.uuid, i.pci_bus_id,
               nvml::device_health_name(i.kind), i.started_ns, i.evidence, i.serial, i.hostname,
               i.cause, i.detected_ns.value_or(i.started_ns), i.fenced_ns);
  CARDIAC_TRY(st->run());
  return db.changes() > 0;
}

Result<bool> close_incident(Db& db, unsigned gpu, TimeNs at, std::string_view returned_by) {
  auto st = db.prepare(
      "UPDATE incidents SET ended_ns = ?, returned_by = ? WHERE gpu = ? AND ended_ns IS NULL");
  if (!st) return fail(st.error());
  st->bind_all(at, returned_by, static_cast<std::int64_t>(gpu));
  CARDIAC_TRY(st->run());
  return db.changes() > 0;
}

Result<bool> mark_incident_fenced(Db& db, unsigned gpu, TimeNs at) {
  auto st = db.prepare(
      "UPDATE incidents SET fenced_ns = ? "
      "WHERE gpu = ? AND ended_ns IS NULL AND fenced_ns IS NULL");
  if (!st) return fail(st.error());
  st->bind_all(at, static_cast<std::int64_t>(gpu));
  CARDIAC_TRY(st->run());
  return db.changes() > 0;
}

Result<std::optional<std::int64_t>> reopen_for_fence(Db& db, unsigned gpu, TimeNs fence_at) {
  auto open = open_incident_of(db, gpu);
  if (!open) return fail(open.error());
  if (*open) return std::optional<std::int64_t>{};
  auto st = db.prepare(
      "SELECT id FROM incidents WHERE gpu = ? AND ended_ns IS NOT NULL AND ended_ns >= ? "
      "AND returned_by = ? ORDER BY ended_ns DESC, id DESC LIMIT 1");
  if (!st) return fail(st.error());
  st->bind_all(static_cast<std::int64_t>(gpu), fence_at, kReturnedByHealth);
  auto row = st->step();
  if (!row) return fail(row.error());
  if (!*row) return std::optional<std::int64_t>{};
  const std::int64_t id = st->column_int64(0);
  auto up = db.prepare("UPDATE incidents SET ended_ns = NULL, returned_by = '' WHERE id = ?");
  if (!up) return fail(up.error());
  up->bind_all(id);
  CARDIAC_TRY(up->run());
  return std::optional<std::int64_t>(id);
}

Result<std::optional<Incident>> open_incident_of(const Db& db, unsigned gpu) {
  auto st = db.prepare(
      fmt::format("SELECT {} FROM incidents WHERE gpu = ? AND ended_ns IS NULL", kColumns));
  if (!st) return fail(st.error());
  st->bind_all(static_cast<std::int64_t>(gpu));
  auto rows = read_rows(*st);
  if (!rows) return fail(rows.error());
  if (rows->empty()) return std::optional<Incident>{};
  CARDIAC_TRY(read_remediations(db, *rows));
  return std::optional<Incident>(std::move(rows->front()));
}

Result<std::vector<Incident>> incidents_since(const Db& db, TimeNs since) {
  auto st =
      db.prepare(fmt::format("SELECT {} FROM incidents WHERE started_ns >= ? OR ended_ns IS NULL "
                             "ORDER BY started_ns DESC, id DESC",
                             kColumns));
  if (!st) return fail(st.error());
  st->bind_all(since);
  auto rows = read_rows(*st);
  if (!rows) return fail(rows.error());
  CARDIAC_TRY(read_remediations(db, *rows));
  return rows;
}

Result<Incident> incident_by_id(const Db& db, std::int64_t id) {
  auto st = db.prepare(fmt::format("SELECT {} FROM incidents WHERE id = ?", kColumns));
  if (!st) return fail(st.error());
  st->bind_all(id);
  auto rows = read_rows(*st);
  if (!rows) return fail(rows.error());
  if (rows->empty()) {
    return fail(Error::not_found(fmt::format("no incident {} (see `cardiac incident list`)", id)));
  }
  CARDIAC_TRY(read_remediations(db, *rows));
  return std::move(rows->front());
}

Status add_remediation(Db& db, std::int64_t id, const Remediation& r) {
  auto exists = incident_by_id(db, id);
  if (!exists) return fail(exists.error());
  auto st = db.prepare(
      "INSERT INTO incident_remediations(incident_id, action, note, who, at_ns) "
      "VALUES (?, ?, ?, ?, ?)");
  if (!st) return fail(st.error());
  st->bind_all(id, remediation_action_name(r.action), r.note, r.who, r.at_ns);
  return st->run();
}

}  // namespace cardiac::store
