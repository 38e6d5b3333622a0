// SPDX-License-Identifier: Apache-2.0
#include "store/tail_decode.h"

#include "core/format.h"

namespace cardiac::store {

Status decode_tail(const Db& db, const TailLog& log, TailScratch& scratch,
                   const TailVisitor& keep) {
  auto st = db.prepare("SELECT id, segment, seq, data FROM sample_tail ORDER BY id");
  if (!st) return fail(std::move(st).error());
  struct Segment {
    TailChain chain;
    std::int64_t next_seq = 0;
  };
  std::map<std::int64_t, Segment> segments;
  auto& [series, times] = scratch;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    const std::int64_t id = st->column_int64(0);
    Segment& seg = segments[st->column_int64(1)];
    if (st->column_int64(2) != seg.next_seq) {
      return fail(Error::parse(fmt::format("sample_tail row {} does not follow its segment", id),
                               db.path()));
    }
    ++seg.next_seq;
    if (auto ok = decode_tail_row_into(st->column_blob(3), seg.chain, series, times); !ok) {
      return fail(ok.error().with_context(fmt::format("{}: sample_tail row {}", db.path(), id)));
    }
    keep(series);
  }
  std::map<std::int64_t, TailChain> chains;
  for (const TailRecord& r : log.records) {
    if (auto ok = decode_tail_row_into(r.data, chains[r.segment], series, times); !ok) {
      return fail(ok.error().with_context(fmt::format(
          "{}: segment {} record {}", tail_log_path(db.path(), r.segment), r.segment, r.seq)));
    }
    keep(series);
  }
  return {};
}

Status decode_tail(const Db& db, const TailVisitor& keep) {
  auto log = live_tail_records(db);
  if (!log) return fail(std::move(log).error());
  TailScratch scratch;
  return decode_tail(db, *log, scratch, keep);
}

Status count_tail(const Db& db, const TailLog& log, TailScratch& scratch, TimeNs from, TimeNs to,
                  std::map<SeriesKey, std::size_t>& counts) {
  return decode_tail(db, log, scratch, [&](const std::vector<SeriesPoints>& series) {
    for (const auto& s : series) {
      for (const Point& p : s.points) {
        if (p.time >= from && p.time < to) ++counts[s.key];
      }
    }
  });
}

}  // namespace cardiac::store
