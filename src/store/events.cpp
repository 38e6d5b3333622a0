// SPDX-License-Identifier: Apache-2.0
// Event log queries.
#include "store/events.h"

namespace cardiac::store {

Result<bool> insert_event(Db& db, const Event& e) {
  auto st = db.prepare(
      "INSERT OR IGNORE INTO events(time_ns, kind, gpu, pci_bus_id, xid, message, source, "
      "dedup_key) VALUES (?,?,?,?,?,?,?,?)");
  if (!st) return fail(std::move(st).error());
  CARDIAC_TRY(
      st->bind_all(e.time_ns, e.kind, e.gpu, e.pci_bus_id, e.xid, e.message, e.source, e.dedup_key)
          .run());
  return db.changes() > 0;
}

Result<std::vector<Event>> events_since(const Db& db, TimeNs since, std::size_t limit) {
  auto st = db.prepare(
      "SELECT id, time_ns, kind, gpu, pci_bus_id, xid, message, source, dedup_key FROM events "
      "WHERE time_ns >= ? ORDER BY time_ns, id LIMIT ?");
  if (!st) return fail(std::move(st).error());
  st->bind_all(since, static_cast<std::int64_t>(limit));
  std::vector<Event> out;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    Event e;
    e.id = st->column_int64(0);
    e.time_ns = st->column_int64(1);
    e.kind = st->column_text(2);
    if (auto g = st->column_opt_int64(3)) e.gpu = static_cast<unsigned>(*g);
    e.pci_bus_id = st->column_text(4);
    e.xid = st->column_opt_int64(5);
    e.message = st->column_text(6);
    e.source = st->column_text(7);
    e.dedup_key = st->column_text(8);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<EventCount>> count_events(const Db& db, TimeNs since) {
  auto st = db.prepare(
      "SELECT kind, xid, count(*) FROM events WHERE time_ns >= ? GROUP BY kind, xid "
      "ORDER BY kind, xid");
  if (!st) return fail(std::move(st).error());
  st->bind_all(since);
  std::vector<EventCount> out;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    out.push_back(EventCount{st->column_text(0), st->column_opt_int64(1), st->column_int64(2)});
  }
  return out;
}

}  // namespace cardiac::store
