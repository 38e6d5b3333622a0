// SPDX-License-Identifier: Apache-2.0
// Minute blocks: the codec, reading a series' buckets back, merging a roll-up into a block.
#include "store/minute_blocks.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "core/format.h"
#include "store/bits.h"
#include "store/retention.h"
#include "store/schema.h"

namespace cardiac::store {
namespace {

// Per bucket flags: max equals min, avg equals min (bit for bit).
constexpr unsigned kMaxIsMin = 1;
constexpr unsigned kAvgIsMin = 2;

// The first byte of a block in the bit-packed layout. A block of the first layout starts with
// its bucket count, a varint of at most 120: one byte below 0x80.
constexpr unsigned char kPackedBlock = 0x81;
constexpr std::uint64_t kMaxBuckets = 2 * 60;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool same(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

struct Reader {
  std::string_view in;
  std::size_t at = 0;
  std::optional<std::uint64_t> varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= in.size()) return std::nullopt;
      const auto b = static_cast<unsigned char>(in[at++]);
      v |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    return std::nullopt;
  }
  std::optional<double> real() {
    if (in.size() - at < 8) return std::nullopt;
    std::uint64_t u = 0;
    for (int i = 0; i < 8; ++i) {
      u |= std::uint64_t{static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)])}
           << (8 * i);
    }
    at += 8;
    return std::bit_cast<double>(u);
  }
};

Error damaged(std::string_view why) {
  return Error::parse(fmt::format("minute block: {}", why));
}

Status read_legacy_minutes(const Db& db, SeriesKey key, TimeNs from, TimeNs to,
                           std::vector<MinuteBucket>& out) {
  auto st = db.prepare(
      "SELECT bucket_ns, min, avg, max, count FROM rollup_1m WHERE metric_id = ?1 AND gpu = ?2 "
      "AND bucket_ns >= ?3 AND bucket_ns < ?4 ORDER BY bucket_ns");
  if (!st) return fail(std::move(st).error());
  st->bind_all(key.metric_id, key.gpu, from, to);
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    out.push_back({st->column_int64(0), st->column_double(1), st->column_double(2),
                   st->column_double(3), st->column_int64(4)});
  }
  return {};
}

}  // namespace

TimeNs block_hour(TimeNs bucket) {
  return bucket - (bucket % kHourNs);
}

// Layout: kPackedBlock, the bucket count (varint), then one bit stream with, per bucket: '0'
// the minute after the previous bucket's, or '1' + its offset in the hour (-59..59, zigzagged,
// 7 bits); '0' the previous bucket's count, or '1' + 7 bits of width + the count; the flags
// (2 bits); min, then max and avg unless a flag says they equal min, each XORed with the same
// column of the bucket before (Gorilla, store/bits.h). A constant hour costs 50 bytes where
// one double per minute cost 660, and the hourly roll-up wrote that for every series.
std::string encode_minute_block(TimeNs hour, std::span<const MinuteBucket> buckets) {
  std::string out;
  out.push_back(static_cast<char>(kPackedBlock));
  put_varint(out, buckets.size());
  BitWriter w(out);
  XorState lo;
  XorState hi;
  XorState mean;
  std::optional<std::int64_t> prev_minute;
  std::uint64_t prev_count = 0;
  for (const MinuteBucket& b : buckets) {
    // A minute's offset in its hour: -59..59 (negative times round towards zero).
    const std::int64_t minute = (b.bucket - hour) / kMinuteNs;
    if (prev_minute && minute == *prev_minute + 1) {
      w.bit(false);
    } else {
      w.bit(true);
      w.put((static_cast<std::uint64_t>(minute) << 1) ^ static_cast<std::uint64_t>(minute >> 63),
            7);
    }
    prev_minute = minute;
    const auto count = static_cast<std::uint64_t>(b.count);
    if (count == prev_count) {
      w.bit(false);
    } else {
      const int width = std::bit_width(count);
      w.bit(true);
      w.put(static_cast<std::uint64_t>(width), 7);
      w.put(count, width);
      prev_count = count;
    }
    unsigned flags = 0;
    if (same(b.max, b.min)) flags |= kMaxIsMin;
    if (same(b.avg, b.min)) flags |= kAvgIsMin;
    w.put(flags, 2);
    put_value(w, lo, b.min);
    if ((flags & kMaxIsMin) == 0) put_value(w, hi, b.max);
    if ((flags & kAvgIsMin) == 0) put_value(w, mean, b.avg);
  }
  return out;
}

namespace {

Result<std::vector<MinuteBucket>> decode_packed_block(std::string_view data, TimeNs hour) {
  data.remove_prefix(1);
  Reader head{data};
  auto n = head.varint();
  if (!n || *n > kMaxBuckets) return fail(damaged("bad bucket count"));
  BitReader r(data.substr(head.at));
  std::vector<MinuteBucket> out;
  out.reserve(*n);
  XorState lo;
  XorState hi;
  XorState mean;
  std::int64_t minute = 0;
  std::uint64_t count = 0;
  for (std::uint64_t i = 0; i < *n; ++i) {
    bool explicit_minute = false;
    if (!r.bit(explicit_minute)) return fail(damaged("truncated"));
    if (explicit_minute) {
      std::uint64_t zz = 0;
      if (!r.get(7, zz)) return fail(damaged("truncated"));
      minute = static_cast<std::int64_t>((zz >> 1) ^ (~(zz & 1) + 1));
    } else if (i == 0) {
      return fail(damaged("first bucket without its minute"));
    } else {
      ++minute;
    }
    bool new_count = false;
    if (!r.bit(new_count)) return fail(damaged("truncated"));
    if (new_count) {
      std::uint64_t width = 0;
      if (!r.get(7, width) || width > 64 || !r.get(static_cast<int>(width), count)) {
        return fail(damaged("truncated count"));
      }
    }
    std::uint64_t flags = 0;
    if (!r.get(2, flags)) return fail(damaged("truncated"));
    if (minute <= -60 || minute >= 60) return fail(damaged("bad bucket"));
    MinuteBucket b;
    b.bucket = hour + minute * kMinuteNs;
    b.count = static_cast<std::int64_t>(count);
    if (!get_value(r, lo, b.min)) return fail(damaged("truncated"));
    b.max = b.avg = b.min;
    if ((flags & kMaxIsMin) == 0 && !get_value(r, hi, b.max)) return fail(damaged("truncated"));
    if ((flags & kAvgIsMin) == 0 && !get_value(r, mean, b.avg)) return fail(damaged("truncated"));
    if (!out.empty() && out.back().bucket >= b.bucket) return fail(damaged("out of order"));
    out.push_back(b);
  }
  // What is left is the last byte's padding.
  if (r.bits_left() >= 8) return fail(damaged("trailing bytes"));
  return out;
}

}  // namespace

Result<std::vector<MinuteBucket>> decode_minute_block(std::string_view data, TimeNs hour) {
  if (!data.empty() && static_cast<unsigned char>(data.front()) == kPackedBlock) {
    return decode_packed_block(data, hour);
  }
  // The first layout: per bucket varints of the offset and count, a flags byte, the doubles.
  Reader r{data};
  auto n = r.varint();
  if (!n || *n > 2 * 60) return fail(damaged("bad bucket count"));
  std::vector<MinuteBucket> out;
  out.reserve(*n);
  for (std::uint64_t i = 0; i < *n; ++i) {
    auto zz = r.varint();
    auto count = r.varint();
    if (!zz || !count || r.at >= data.size()) return fail(damaged("truncated"));
    const auto flags = static_cast<unsigned char>(data[r.at++]);
    const auto minute = static_cast<std::int64_t>((*zz >> 1) ^ (~(*zz & 1) + 1));
    if (minute <= -60 || minute >= 60 || flags > 3) return fail(damaged("bad bucket"));
    MinuteBucket b;
    b.bucket = hour + minute * kMinuteNs;
    b.count = static_cast<std::int64_t>(*count);
    auto lo = r.real();
    if (!lo) return fail(damaged("truncated"));
    b.min = b.max = b.avg = *lo;
    if ((flags & kMaxIsMin) == 0) {
      auto hi = r.real();
      if (!hi) return fail(damaged("truncated"));
      b.max = *hi;
    }
    if ((flags & kAvgIsMin) == 0) {
      auto avg = r.real();
      if (!avg) return fail(damaged("truncated"));
      b.avg = *avg;
    }
    if (!out.empty() && out.back().bucket >= b.bucket) return fail(damaged("out of order"));
    out.push_back(b);
  }
  if (r.at != data.size()) return fail(damaged("trailing bytes"));
  return out;
}

Result<std::vector<MinuteBucket>> read_minute_buckets(const Db& db, SeriesKey key, TimeNs from,
                                                      TimeNs to) {
  std::vector<MinuteBucket> out;
  if (from >= to) return out;
  CARDIAC_TRY(read_legacy_minutes(db, key, from, to, out));
  // Every block hour that can hold a bucket of the range, one index seek each. The hour before
  // the range's first one too: with negative times a block holds minutes of the hour before.
  auto st = db.prepare(
      "WITH RECURSIVE h(t) AS (SELECT ?1 UNION ALL SELECT t + ?3 FROM h WHERE t + ?3 < ?2) "
      "SELECT b.hour_ns, b.data FROM h CROSS JOIN rollup_1m_blocks AS b "
      "ON b.hour_ns = h.t AND b.metric_id = ?4 AND b.gpu = ?5");
  if (!st) return fail(std::move(st).error());
  // Only the hours blocks exist for: a range from the epoch must not cost a seek per hour.
  auto span = db.prepare("SELECT min(hour_ns), max(hour_ns) FROM rollup_1m_blocks");
  if (!span) return fail(std::move(span).error());
  auto got = span->step();
  if (!got) return fail(std::move(got).error());
  if (!*got || span->column_is_null(0)) return out;
  const TimeNs lowest = span->column_int64(0);
  const TimeNs first = from <= lowest ? lowest : std::max(lowest, block_hour(from) - kHourNs);
  const TimeNs last = std::min(to, span->column_int64(1) + 1);
  span->reset();
  if (first >= last) return out;
  st->bind_all(first, last, kHourNs, key.metric_id, key.gpu);
  const std::size_t legacy = out.size();
  for (;;) {
    auto row = st->step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    const TimeNs hour = st->column_int64(0);
    auto buckets = decode_minute_block(st->column_blob(1), hour);
    if (!buckets) {
      return fail(
          buckets.error().with_context(fmt::format("{}: minute block of hour {}, metric {}, gpu {}",
                                                   db.path(), hour, key.metric_id, key.gpu)));
    }
    for (const MinuteBucket& b : *buckets) {
      if (b.bucket >= from && b.bucket < to) out.push_back(b);
    }
  }
  // Rows of the older table and blocks never hold the same minute, and each part is in order.
  if (legacy > 0 && legacy < out.size()) {
    std::inplace_merge(
        out.begin(), out.begin() + static_cast<std::ptrdiff_t>(legacy), out.end(),
        [](const MinuteBucket& a, const MinuteBucket& b) { return a.bucket < b.bucket; });
  }
  return out;
}

Status merge_minute_block(Db& db, SeriesKey key, TimeNs hour, std::span<const MinuteBucket> fresh) {
  if (fresh.empty()) return {};
  // The older table's rows of these minutes are replaced, as INSERT OR REPLACE did.
  auto del = db.prepare(
      "DELETE FROM rollup_1m WHERE metric_id = ?1 AND gpu = ?2 AND bucket_ns >= ?3 AND "
      "bucket_ns <= ?4");
  if (!del) return fail(std::move(del).error());
  CARDIAC_TRY(
      del->bind_all(key.metric_id, key.gpu, fresh.front().bucket, fresh.back().bucket).run());

  auto sel = db.prepare(
      "SELECT id, data FROM rollup_1m_blocks WHERE hour_ns = ?1 AND metric_id = ?2 AND gpu = ?3");
  if (!sel) return fail(std::move(sel).error());
  sel->bind_all(hour, key.metric_id, key.gpu);
  auto row = sel->step();
  if (!row) return fail(std::move(row).error());
  std::optional<std::int64_t> id;
  std::string old;
  std::map<TimeNs, MinuteBucket> merged;
  if (*row) {
    id = sel->column_int64(0);
    old = std::string(sel->column_blob(1));
    auto buckets = decode_minute_block(old, hour);
    if (!buckets) {
      return fail(buckets.error().with_context(
          fmt::format("{}: minute block {} of hour {}", db.path(), *id, hour)));
    }
    for (const MinuteBucket& b : *buckets) merged[b.bucket] = b;
  }
  sel->reset();
  for (const MinuteBucket& b : fresh) merged[b.bucket] = b;
  std::vector<MinuteBucket> all;
  all.reserve(merged.size());
  for (const auto& [t, b] : merged) all.push_back(b);
  const std::string data = encode_minute_block(hour, all);
  if (id && data == old) return {};
  const auto buckets = static_cast<std::int64_t>(all.size());
  if (id) {
    auto up = db.prepare("UPDATE rollup_1m_blocks SET buckets = ?2, data = ?3 WHERE id = ?1");
    if (!up) return fail(std::move(up).error());
    up->bind_all(*id, buckets).bind_blob(3, data);
    return up->run();
  }
  auto ins = db.prepare(
      "INSERT INTO rollup_1m_blocks(hour_ns, metric_id, gpu, buckets, data) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!ins) return fail(std::move(ins).error());
  ins->bind_all(hour, key.metric_id, key.gpu, buckets).bind_blob(5, data);
  return ins->run();
}

Result<std::int64_t> prune_minute_blocks_locked(Db& db, TimeNs before) {
  std::int64_t deleted = 0;
  if (before == std::numeric_limits<TimeNs>::min()) return deleted;
  // A block's buckets all lie before its hour + 1 h: those blocks go whole, an index range.
  const TimeNs whole = before - kHourNs;
  auto n = db.prepare("SELECT coalesce(sum(buckets), 0) FROM rollup_1m_blocks WHERE hour_ns <= ?1");
  if (!n) return fail(std::move(n).error());
  n->bind_all(whole);
  auto row = n->step();
  if (!row) return fail(std::move(row).error());
  deleted += *row ? n->column_int64(0) : 0;
  n->reset();
  if (deleted > 0) {
    auto del = db.prepare("DELETE FROM rollup_1m_blocks WHERE hour_ns <= ?1");
    if (!del) return fail(std::move(del).error());
    CARDIAC_TRY(del->bind_all(whole).run());
  }
  // The blocks that may straddle `before` (an hour more for negative times) lose their older
  // buckets, as the DELETE by bucket time over rows did.
  auto sel = db.prepare(
      "SELECT id, hour_ns, data FROM rollup_1m_blocks WHERE hour_ns > ?1 AND hour_ns < ?2");
  if (!sel) return fail(std::move(sel).error());
  sel->bind_all(whole - kHourNs, before);
  struct Trim {
    std::int64_t id;
    TimeNs hour;
    std::vector<MinuteBucket> keep;
    std::int64_t dropped;
  };
  std::vector<Trim> trims;
  for (;;) {
    auto got = sel->step();
    if (!got) return fail(std::move(got).error());
    if (!*got) break;
    const TimeNs hour = sel->column_int64(1);
    auto buckets = decode_minute_block(sel->column_blob(2), hour);
    if (!buckets) return fail(buckets.error().with_context(db.path()));
    Trim t{sel->column_int64(0), hour, {}, 0};
    for (const MinuteBucket& b : *buckets) {
      if (b.bucket < before) {
        ++t.dropped;
      } else {
        t.keep.push_back(b);
      }
    }
    if (t.dropped > 0) trims.push_back(std::move(t));
  }
  sel->reset();
  for (const Trim& t : trims) {
    deleted += t.dropped;
    if (t.keep.empty()) {
      auto del = db.prepare("DELETE FROM rollup_1m_blocks WHERE id = ?1");
      if (!del) return fail(std::move(del).error());
      CARDIAC_TRY(del->bind_all(t.id).run());
      continue;
    }
    auto up = db.prepare("UPDATE rollup_1m_blocks SET buckets = ?2, data = ?3 WHERE id = ?1");
    if (!up) return fail(std::move(up).error());
    up->bind_all(t.id, static_cast<std::int64_t>(t.keep.size()))
        .bind_blob(3, encode_minute_block(t.hour, t.keep));
    CARDIAC_TRY(up->run());
  }
  return deleted;
}

}  // namespace cardiac::store
