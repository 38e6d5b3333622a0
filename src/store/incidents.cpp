// SPDX-License-Identifier: Apache-2.0
// Incident rows.
#include "store/incidents.h"

#include "core/format.h"
#include "nvml/gpu_json.h"

namespace cardiac::store {

Result<bool> open_incident(Db& db, const Incident& i) {
  auto st = db.prepare(
      "INSERT OR IGNORE INTO incidents(gpu, uuid, pci_bus_id, kind, started_ns, evidence) "
      "VALUES (?, ?, ?, ?, ?, ?)");
  if (!st) return fail(st.error());
  st->bind_all(static_cast<std::int64_t>(i.gpu), i.uuid, i.pci_bus_id,
               nvml::device_health_name(i.kind), i.started_ns, i.evidence);
  CARDIAC_TRY(st->run());
  return db.changes() > 0;
}

Result<bool> close_incident(Db& db, unsigned gpu, TimeNs at) {
  auto st = db.prepare("UPDATE incidents SET ended_ns = ? WHERE gpu = ? AND ended_ns IS NULL");
  if (!st) return fail(st.error());
  st->bind_all(at, static_cast<std::int64_t>(gpu));
  CARDIAC_TRY(st->run());
  return db.changes() > 0;
}

Result<std::vector<Incident>> incidents_since(const Db& db, TimeNs since) {
  auto st = db.prepare(
      "SELECT id, gpu, uuid, pci_bus_id, kind, started_ns, ended_ns, evidence FROM incidents "
      "WHERE started_ns >= ? OR ended_ns IS NULL ORDER BY started_ns DESC, id DESC");
  if (!st) return fail(st.error());
  st->bind_all(since);
  std::vector<Incident> out;
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    Incident i;
    i.id = st->column_int64(0);
    i.gpu = static_cast<unsigned>(st->column_int64(1));
    i.uuid = st->column_text(2);
    i.pci_bus_id = st->column_text(3);
    auto kind = nvml::device_health_from_name(st->column_text(4));
    if (!kind) return fail(kind.error().with_context(fmt::format("incident {}", i.id)));
    i.kind = *kind;
    i.started_ns = st->column_int64(5);
    i.ended_ns = st->column_opt_int64(6);
    i.evidence = st->column_text(7);
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace cardiac::store
