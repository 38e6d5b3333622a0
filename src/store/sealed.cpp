// SPDX-License-Identifier: Apache-2.0
// Reading, sealing and pruning raw samples across chunks, the tail and legacy rows.
#include "store/sealed.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "core/format.h"
#include "store/point_pool.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/tail_decode.h"
#include "store/tail_log.h"

namespace cardiac::store {
namespace {

constexpr TimeNs kAllTime = std::numeric_limits<TimeNs>::max();

std::optional<std::int64_t> legacy_gpu(const SeriesKey& key) {
  if (key.gpu == kHostGpu) return std::nullopt;
  return key.gpu;
}

void keep_range(const std::vector<Point>& points, TimeNs from, TimeNs to, std::vector<Point>& out) {
  for (const Point& p : points) {
    if (p.time >= from && p.time < to) out.push_back(p);
  }
}

// The tail's points in [from, to), into `out`. `only` limits the output to one series (the rows
// are decoded in full either way: each continues the previous one).
Status read_tail(const Db& db, const SeriesKey* only, TimeNs from, TimeNs to, SeriesMap& out) {
  return decode_tail(db, [&](const std::vector<SeriesPoints>& series) {
    for (const auto& s : series) {
      if (only != nullptr && s.key != *only) continue;
      keep_range(s.points, from, to, out[s.key]);
    }
  });
}

bool earlier(const Point& a, const Point& b) {
  return a.time < b.time;
}

// Sorts by time, keeping the order of equal times. Chunks come in seal order and the tail
// after them, so the points are usually sorted already: check that first (linear).
void sort_points(std::vector<Point>& points) {
  if (std::is_sorted(points.begin(), points.end(), earlier)) return;
  std::stable_sort(points.begin(), points.end(), earlier);
}

void sort_series(SeriesMap& m) {
  for (auto& [key, points] : m) sort_points(points);
}

// The chunks of seals overlapping [from, to), of one series or all. The seals are the outer
// loop (CROSS JOIN fixes the order), each one a seek on sample_chunks_by_seal.
Status read_chunks(const Db& db, const SeriesKey* only, TimeNs from, TimeNs to, SeriesMap& out) {
  std::string sql =
      "SELECT s.id, s.times, c.metric_id, c.gpu, c.data, c.start_ns, c.end_ns "
      "FROM sample_seals AS s "
      "CROSS JOIN sample_chunks AS c ON c.seal_id = s.id ";
  sql += only != nullptr ? "AND c.metric_id = ?3 AND c.gpu = ?4 " : "";
  sql +=
      "WHERE s.end_ns >= ?1 AND s.start_ns < ?2 AND c.end_ns >= ?1 AND c.start_ns < ?2 "
      "ORDER BY s.id";
  auto st = db.prepare(sql);
  if (!st) return fail(std::move(st).error());
  st->bind(1, from).bind(2, to);
  if (only != nullptr) st->bind(3, only->metric_id).bind(4, only->gpu);
  std::int64_t times_of = -1;
  std::vector<TimeNs> times;
  std::vector<Point>* into = nullptr;
  SeriesKey into_key;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    const std::int64_t seal = st->column_int64(0);
    if (seal != times_of) {
      auto decoded = decode_times(st->column_blob(1));
      if (!decoded) {
        return fail(decoded.error().with_context(fmt::format("{}: seal {}", db.path(), seal)));
      }
      times = std::move(*decoded);
      times_of = seal;
    }
    const SeriesKey key{st->column_int64(2), st->column_int64(3)};
    if (into == nullptr || key != into_key) {
      into = &out[key];
      into_key = key;
    }
    // Decoded straight into the series' points, then trimmed to the range where the chunk
    // sticks out of it (only the first and last seals of a range).
    const std::size_t before = into->size();
    auto decoded = decode_chunk_into(st->column_blob(4), times, *into);
    if (!decoded) {
      return fail(decoded.error().with_context(fmt::format(
          "{}: chunk of seal {}, metric {}, gpu {}", db.path(), seal, key.metric_id, key.gpu)));
    }
    if (st->column_int64(5) < from || st->column_int64(6) >= to) {
      const auto first = into->begin() + static_cast<std::ptrdiff_t>(before);
      into->erase(std::remove_if(first, into->end(),
                                 [&](const Point& p) { return p.time < from || p.time >= to; }),
                  into->end());
    }
  }
  return {};
}

Status read_legacy(const Db& db, const SeriesKey& key, TimeNs from, TimeNs to,
                   std::vector<Point>& out) {
  auto st = db.prepare(
      "SELECT time_ns, value FROM samples WHERE metric_id = ?1 AND gpu IS ?2 AND time_ns >= ?3 "
      "AND time_ns < ?4 ORDER BY time_ns");
  if (!st) return fail(std::move(st).error());
  st->bind_all(key.metric_id, legacy_gpu(key), from, to);
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    out.push_back({st->column_int64(0), st->column_double(1)});
  }
  return {};
}

Result<bool> legacy_is_empty(const Db& db) {
  auto any = db.query_int64("SELECT EXISTS (SELECT 1 FROM samples)");
  if (!any) return fail(std::move(any).error());
  return any->value_or(0) == 0;
}

// The `sample_seals` row of a new seal over `times` (not empty); returns its id.
Result<std::int64_t> insert_seal(Db& db, const std::vector<TimeNs>& times) {
  auto next = db.query_int64("SELECT coalesce(max(id), 0) + 1 FROM sample_seals");
  if (!next) return fail(std::move(next).error());
  const std::int64_t seal = next->value_or(1);
  auto ins_seal =
      db.prepare("INSERT INTO sample_seals(id, start_ns, end_ns, times) VALUES (?1, ?2, ?3, ?4)");
  if (!ins_seal) return fail(std::move(ins_seal).error());
  ins_seal->bind_all(seal, times.front(), times.back()).bind_blob(4, encode_times(times));
  CARDIAC_TRY(ins_seal->run());
  return seal;
}

// The chunk rows of seal `seal`, whose instants are `times`: one per series given to add().
class ChunkInserter {
 public:
  static Result<ChunkInserter> prepare(Db& db, std::int64_t seal, std::span<const TimeNs> times) {
    auto ins = db.prepare(
        "INSERT INTO sample_chunks(seal_id, metric_id, gpu, start_ns, end_ns, count, data) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!ins) return fail(std::move(ins).error());
    return ChunkInserter(std::move(*ins), seal, times);
  }

  Status add(const SeriesKey& key, std::span<const Point> points) {
    if (points.empty()) return {};
    auto data = encode_chunk(points, times_);
    if (!data) return fail(std::move(data).error());
    const auto [lo, hi] = std::minmax_element(points.begin(), points.end(), earlier);
    ins_.bind_all(seal_, key.metric_id, key.gpu, lo->time, hi->time,
                  static_cast<std::int64_t>(points.size()));
    ins_.bind_blob(7, *data);
    CARDIAC_TRY(ins_.run());
    ins_.reset();
    return {};
  }

 private:
  ChunkInserter(Statement ins, std::int64_t seal, std::span<const TimeNs> times)
      : ins_(std::move(ins)), seal_(seal), times_(times) {}

  Statement ins_;
  std::int64_t seal_;
  std::span<const TimeNs> times_;  // the seal's column, which outlives the inserter
};

// One seal of `series`: the time column of every instant, then a chunk per series.
Result<std::int64_t> write_seal(Db& db, const SeriesMap& series) {
  InstantSet instants;
  std::int64_t total = 0;
  for (const auto& [key, points] : series) {
    instants.add(points);
    instants.merge();
    total += static_cast<std::int64_t>(points.size());
  }
  if (total == 0) return total;
  auto seal = insert_seal(db, instants.times());
  if (!seal) return fail(std::move(seal).error());
  auto ins = ChunkInserter::prepare(db, *seal, instants.times());
  if (!ins) return fail(std::move(ins).error());
  for (const auto& [key, points] : series) CARDIAC_TRY(ins->add(key, points));
  return total;
}

}  // namespace

Result<std::vector<Point>> read_series(const Db& db, SeriesKey key, TimeNs from, TimeNs to,
                                       TailCache* tail) {
  std::vector<Point> out;
  if (from >= to) return out;
  CARDIAC_TRY(read_legacy(db, key, from, to, out));
  SeriesMap m;
  CARDIAC_TRY(read_chunks(db, &key, from, to, m));
  if (tail != nullptr && tail->gpu == key.gpu) {
    if (!tail->loaded) {
      SeriesMap all;
      CARDIAC_TRY(read_tail(db, nullptr, std::numeric_limits<TimeNs>::min(), kAllTime, all));
      for (auto& [k, points] : all) {
        if (k.gpu == tail->gpu) tail->series.emplace(k, std::move(points));
      }
      tail->loaded = true;
    }
    if (auto it = tail->series.find(key); it != tail->series.end()) {
      keep_range(it->second, from, to, m[key]);
    }
  } else {
    CARDIAC_TRY(read_tail(db, &key, from, to, m));
  }
  if (auto it = m.find(key); it != m.end()) {
    if (out.empty()) {
      out = std::move(it->second);
    } else {
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
  }
  sort_points(out);
  return out;
}

Result<SeriesMap> read_all_series(const Db& db, TimeNs from, TimeNs to) {
  SeriesMap out;
  if (from >= to) return out;
  auto empty = legacy_is_empty(db);
  if (!empty) return fail(std::move(empty).error());
  if (!*empty) {
    auto series = list_series(db, "samples");
    if (!series) return fail(std::move(series).error());
    for (const auto& s : *series) {
      const SeriesKey key{s.metric_id, s.gpu.value_or(kHostGpu)};
      CARDIAC_TRY(read_legacy(db, key, from, to, out[key]));
    }
  }
  CARDIAC_TRY(read_chunks(db, nullptr, from, to, out));
  CARDIAC_TRY(read_tail(db, nullptr, from, to, out));
  std::erase_if(out, [](const auto& kv) { return kv.second.empty(); });
  sort_series(out);
  return out;
}

Status for_each_series(const Db& db, TimeNs from, TimeNs to, const SeriesVisitor& each) {
  if (from >= to) return {};
  std::set<SeriesKey> keys;
  auto empty = legacy_is_empty(db);
  if (!empty) return fail(std::move(empty).error());
  if (!*empty) {
    auto series = list_series(db, "samples");
    if (!series) return fail(std::move(series).error());
    for (const auto& s : *series) keys.insert({s.metric_id, s.gpu.value_or(kHostGpu)});
  }
  auto st = db.prepare(
      "SELECT DISTINCT c.metric_id, c.gpu FROM sample_seals AS s CROSS JOIN sample_chunks AS c "
      "ON c.seal_id = s.id WHERE s.end_ns >= ?1 AND s.start_ns < ?2 AND c.end_ns >= ?1 AND "
      "c.start_ns < ?2");
  if (!st) return fail(std::move(st).error());
  st->bind_all(from, to);
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    keys.insert({st->column_int64(0), st->column_int64(1)});
  }
  auto log = live_tail_records(db);
  if (!log) return fail(std::move(log).error());
  TailScratch scratch;
  std::map<SeriesKey, std::size_t> in_tail;
  CARDIAC_TRY(count_tail(db, *log, scratch, from, to, in_tail));
  for (const auto& [key, n] : in_tail) keys.insert(key);
  const std::vector<SeriesKey> ordered(keys.begin(), keys.end());
  PointPool tail;
  std::vector<PointPool::Size> sizes;
  std::vector<Point> points;
  const auto in_tail_of = [&](std::size_t i) {
    const auto it = in_tail.find(ordered[i]);
    return it == in_tail.end() ? std::size_t{0} : it->second;
  };
  for (std::size_t first = 0, end = 0; first < ordered.size(); first = end) {
    end = group_end(first, ordered.size(), in_tail_of);
    const auto group = std::span(ordered).subspan(first, end - first);
    sizes.clear();
    for (const SeriesKey& key : group) {
      if (auto it = in_tail.find(key); it != in_tail.end()) sizes.emplace_back(key, it->second);
    }
    tail.reset(sizes);
    if (!sizes.empty()) {
      CARDIAC_TRY(fill_from_tail(db, *log, scratch, tail,
                                 [&](const Point& p) { return p.time >= from && p.time < to; }));
    }
    for (const SeriesKey& key : group) {
      points.clear();
      if (!*empty) CARDIAC_TRY(read_legacy(db, key, from, to, points));
      SeriesMap chunks;
      CARDIAC_TRY(read_chunks(db, &key, from, to, chunks));
      if (auto it = chunks.find(key); it != chunks.end()) {
        points.insert(points.end(), it->second.begin(), it->second.end());
      }
      const auto tail_points = tail.points(key);
      points.insert(points.end(), tail_points.begin(), tail_points.end());
      if (points.empty()) continue;
      sort_points(points);
      CARDIAC_TRY(each(key, points));
    }
  }
  return {};
}

Result<bool> has_raw_series(const Db& db, SeriesKey key) {
  auto st = db.prepare(
      "SELECT EXISTS (SELECT 1 FROM samples WHERE metric_id = ?1 AND gpu IS ?3) "
      "OR EXISTS (SELECT 1 FROM sample_seals AS s CROSS JOIN sample_chunks AS c "
      "ON c.seal_id = s.id AND c.metric_id = ?1 AND c.gpu = ?2)");
  if (!st) return fail(std::move(st).error());
  st->bind_all(key.metric_id, key.gpu, legacy_gpu(key));
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  if (*row && st->column_int64(0) != 0) return true;
  bool found = false;
  CARDIAC_TRY(decode_tail(db, [&](const std::vector<SeriesPoints>& series) {
    for (const auto& s : series) found = found || (s.key == key && !s.points.empty());
  }));
  return found;
}

Result<std::vector<std::int64_t>> gpus_with_raw_samples(const Db& db, TimeNs since) {
  auto st = db.prepare(
      "SELECT gpu FROM samples WHERE gpu IS NOT NULL AND time_ns >= ?1 "
      "UNION SELECT c.gpu FROM sample_seals AS s CROSS JOIN sample_chunks AS c "
      "ON c.seal_id = s.id WHERE s.end_ns >= ?1 AND c.end_ns >= ?1 AND c.gpu != ?2");
  if (!st) return fail(std::move(st).error());
  st->bind_all(since, kHostGpu);
  std::set<std::int64_t> gpus;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    gpus.insert(st->column_int64(0));
  }
  CARDIAC_TRY(decode_tail(db, [&](const std::vector<SeriesPoints>& series) {
    for (const auto& s : series) {
      if (s.key.gpu == kHostGpu) continue;
      const bool since_then = std::any_of(s.points.begin(), s.points.end(),
                                          [&](const Point& p) { return p.time >= since; });
      if (since_then) gpus.insert(s.key.gpu);
    }
  }));
  return std::vector<std::int64_t>(gpus.begin(), gpus.end());
}

Result<TailLog> live_tail_records(const Db& db) {
  auto sealed = sealed_tail_segment(db);
  if (!sealed) return fail(std::move(sealed).error());
  return read_tail_log(db.path(), *sealed);
}

Result<std::int64_t> count_raw_samples(const Db& db) {
  auto n = db.query_int64(
      "SELECT (SELECT count(*) FROM samples) + (SELECT coalesce(sum(count), 0) FROM "
      "sample_chunks) + (SELECT coalesce(sum(count), 0) FROM sample_tail)");
  if (!n) return fail(std::move(n).error());
  auto log = live_tail_records(db);
  if (!log) return fail(std::move(log).error());
  std::int64_t total = n->value_or(0);
  for (const TailRecord& r : log->records) total += r.count;
  return total;
}

// A seal of the tail holds about 600 points of each series (3.4 MB as points for 8 GPUs). The
// chunks are made a group of series at a time (group_end), each decoded from the tail anew, so the
// sampler holds one group's points, not the whole seal's. The first pass counts the points and
// collects the instants; the chunks go in key order, as one group would. The tail files are
// read once.

Result<std::int64_t> seal_tail_locked(Db& db, const SeriesMap& extra) {
  auto log = live_tail_records(db);
  if (!log) return fail(std::move(log).error());
  std::int64_t last_segment = 0;
  for (const TailRecord& r : log->records) last_segment = std::max(last_segment, r.segment);
  std::map<SeriesKey, std::size_t> counts;
  InstantSet instants;
  for (const auto& [key, points] : extra) {
    counts[key] += points.size();
    instants.add(points);
  }
  instants.merge();
  TailScratch scratch;
  CARDIAC_TRY(decode_tail(db, *log, scratch, [&](const std::vector<SeriesPoints>& series) {
    // One merge per record: its series share the record's few instants.
    for (const auto& sp : series) {
      counts[sp.key] += sp.points.size();
      instants.add(sp.points);
    }
    instants.merge();
  }));
  std::int64_t total = 0;
  for (const auto& [key, n] : counts) total += static_cast<std::int64_t>(n);
  if (total > 0) {
    auto seal = insert_seal(db, instants.times());
    if (!seal) return fail(std::move(seal).error());
    auto ins = ChunkInserter::prepare(db, *seal, instants.times());
    if (!ins) return fail(std::move(ins).error());
    const std::vector<PointPool::Size> sizes(counts.begin(), counts.end());
    PointPool group;
    const auto points_of = [&](std::size_t i) { return sizes[i].second; };
    for (std::size_t first = 0, end = 0; first < sizes.size(); first = end) {
      end = group_end(first, sizes.size(), points_of);
      group.reset(std::span(sizes).subspan(first, end - first));
      // The batch's points before the tail's, as the seal of one map had them. A key of another
      // group is not in this one: add() leaves its points out.
      for (const auto& [key, points] : extra) group.add(key, points);
      CARDIAC_TRY(fill_from_tail(db, *log, scratch, group, [](const Point&) { return true; }));
      Status done;
      group.for_each([&](const SeriesKey& key, std::span<const Point> points) {
        if (done) done = ins->add(key, points);
      });
      CARDIAC_TRY(std::move(done));
    }
  }
  CARDIAC_TRY(db.exec("DELETE FROM sample_tail"));
  // The files keep the records until their segment's file is reused; from now on they are
  // stale, in the same commit as the seal that holds them.
  CARDIAC_TRY(set_sealed_tail_segment(db, last_segment));
  return total;
}

Result<std::int64_t> seal_tail(Db& db) {
  auto tx = Transaction::begin(db);
  if (!tx) return fail(std::move(tx).error());
  auto sealed = seal_tail_locked(db);
  if (!sealed) return fail(std::move(sealed).error());
  CARDIAC_TRY(tx->commit());
  return sealed;
}

Result<std::int64_t> seal_legacy_samples(Db& db, std::int64_t max_rows) {
  auto tx = Transaction::begin(db);
  if (!tx) return fail(std::move(tx).error());
  auto st = db.prepare(
      "SELECT rowid, time_ns, gpu, metric_id, value FROM samples ORDER BY rowid LIMIT ?");
  if (!st) return fail(std::move(st).error());
  st->bind_all(max_rows);
  SeriesMap series;
  std::int64_t last = 0;
  std::int64_t rows = 0;
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    last = st->column_int64(0);
    const SeriesKey key{st->column_int64(3), st->column_opt_int64(2).value_or(kHostGpu)};
    series[key].push_back({st->column_int64(1), st->column_double(4)});
    ++rows;
  }
  if (rows == 0) return rows;
  auto written = write_seal(db, series);
  if (!written) return fail(std::move(written).error());
  auto del = db.prepare("DELETE FROM samples WHERE rowid <= ?");
  if (!del) return fail(std::move(del).error());
  CARDIAC_TRY(del->bind_all(last).run());
  CARDIAC_TRY(tx->commit());
  return rows;
}

Result<std::int64_t> prune_seals_locked(Db& db, TimeNs before) {
  auto n = db.prepare(
      "SELECT coalesce(sum(c.count), 0) FROM sample_seals AS s CROSS JOIN sample_chunks AS c "
      "ON c.seal_id = s.id WHERE s.end_ns < ?");
  if (!n) return fail(std::move(n).error());
  n->bind_all(before);
  auto row = n->step();
  if (!row) return fail(std::move(row).error());
  const std::int64_t samples = *row ? n->column_int64(0) : 0;
  n->reset();
  if (samples == 0) return samples;
  auto chunks = db.prepare(
      "DELETE FROM sample_chunks WHERE seal_id IN (SELECT id FROM sample_seals WHERE end_ns < ?)");
  if (!chunks) return fail(std::move(chunks).error());
  CARDIAC_TRY(chunks->bind_all(before).run());
  auto seals = db.prepare("DELETE FROM sample_seals WHERE end_ns < ?");
  if (!seals) return fail(std::move(seals).error());
  CARDIAC_TRY(seals->bind_all(before).run());
  return samples;
}

}  // namespace cardiac::store
