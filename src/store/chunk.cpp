// SPDX-License-Identifier: Apache-2.0
// The three encodings: time columns, chunks and tail rows; Gorilla's value coding.
#include "store/chunk.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "store/bits.h"

namespace cardiac::store {
namespace {

// The first byte of every blob says what it is, so a blob handed to the wrong decoder (or a
// later format) is refused instead of misread.
constexpr std::uint8_t kTimesFormat = 0x01;
constexpr std::uint8_t kChunkFormat = 0x02;
constexpr std::uint8_t kTailFormat = 0x03;  // read only: rows of schema 6's sample_tail
constexpr std::uint8_t kTailMaskFormat = 0x04;
// Format 5: format 2 with steps that repeat the last step other than 1 in two bits (see
// put_step). Each GPU's series skip the host's instants, which come between theirs every few
// seconds: format 2 paid 10 bits for every such step, a quarter of a constant chunk.
constexpr std::uint8_t kChunkRepeatFormat = 0x05;
// Format 4, per series: '0' a point at every instant of the row; '10' the instants of the
// previous mask of the row; '110' + one bit per instant (rows of at most kMaxMaskInstants);
// '111' + 32-bit count + the points' instant steps (format 3's partial series).
constexpr std::size_t kMaxMaskInstants = 64;

// Tail row flag: the series list is the previous row's.
constexpr std::uint64_t kSameList = 1;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view& in, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto b = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

constexpr std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int64_t unzigzag(std::uint64_t z) {
  return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
}

Error corrupt(std::string_view what) {
  return Error::parse(std::string("corrupt sample blob: ") + std::string(what));
}

// Delta of deltas, in wrapping 64-bit arithmetic so any jump is exact. Buckets sized for
// nanosecond clocks: a regular interval is 1 bit; jitter of up to ±8 µs, ±8 ms, ±8.6 s, else 64.
struct DodBucket {
  std::uint64_t prefix;
  int prefix_bits;
  int value_bits;
};
constexpr DodBucket kDodBuckets[] = {{0b10, 2, 14}, {0b110, 3, 24}, {0b1110, 4, 35}};

void put_dod(BitWriter& w, std::uint64_t z) {
  if (z == 0) return w.bit(false);
  for (const auto& b : kDodBuckets) {
    if (z < (std::uint64_t{1} << b.value_bits)) {
      w.put(b.prefix, b.prefix_bits);
      return w.put(z, b.value_bits);
    }
  }
  w.put(0b1111, 4);
  w.put(z, 64);
}

bool get_dod(BitReader& r, std::uint64_t& z) {
  z = 0;
  const std::uint64_t prefix = r.peek(4);
  if ((prefix & 0b1000) == 0) return r.skip(1);
  int ones = 1;
  while (ones < 4 && (prefix & (0b1000u >> ones)) != 0) ++ones;
  if (!r.skip(ones == 4 ? 4 : ones + 1)) return false;
  return r.get(ones == 4 ? 64 : kDodBuckets[ones - 1].value_bits, z);
}

// A point's step from the previous point's instant index (-1 before the first). Formats 2 and
// 4: '0' the next instant, '10' + 8 bits, '11' + 32 bits (0 = the same instant again). Format 5
// (`last` set): '0' the next instant, '10' the last step other than 1 again, '110' + 8 bits, '111'
// + 32 bits; `last` starts at 2 (one instant skipped).
constexpr std::uint64_t kFirstRepeatStep = 2;

void put_step(BitWriter& w, std::uint64_t step, std::uint64_t* last) {
  if (step == 1) return w.bit(false);
  if (last != nullptr) {
    if (step == *last) return w.put(0b10, 2);
    *last = step;
    w.put(0b11, 2);
  } else {
    w.bit(true);
  }
  if (step < 256) {
    w.bit(false);
    return w.put(step, 8);
  }
  w.bit(true);
  w.put(step, 32);
}

bool get_step(BitReader& r, std::uint64_t& step, std::uint64_t* last) {
  const std::uint64_t prefix = r.peek(3);
  if ((prefix & 0b100) == 0) {
    step = 1;
    return r.skip(1);
  }
  if (last != nullptr) {
    if ((prefix & 0b010) == 0) {
      step = *last;
      return r.skip(2);
    }
    if (!r.skip(3) || !r.get((prefix & 0b001) != 0 ? 32 : 8, step)) return false;
    *last = step;
    return true;
  }
  if (!r.skip(2)) return false;
  return r.get((prefix & 0b010) != 0 ? 32 : 8, step);
}

void encode_times_into(std::string& out, std::span<const TimeNs> times) {
  out.push_back(static_cast<char>(kTimesFormat));
  put_varint(out, times.size());
  BitWriter w(out);
  std::uint64_t prev = 0;
  std::uint64_t prev_delta = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    const auto t = static_cast<std::uint64_t>(times[i]);
    if (i == 0) {
      w.put(t, 64);
    } else {
      const std::uint64_t delta = t - prev;
      put_dod(w, zigzag(static_cast<std::int64_t>(delta - prev_delta)));
      prev_delta = delta;
    }
    prev = t;
  }
}

// Encodes the points (sorted by time) of one series: instant steps into `times` and values.
Status put_points(BitWriter& w, std::span<const Point> points, std::span<const TimeNs> times,
                  XorState& state, std::uint64_t* last_step = nullptr) {
  std::int64_t prev_index = -1;
  for (const Point& p : points) {
    auto it = std::lower_bound(times.begin(), times.end(), p.time);
    if (it == times.end() || *it != p.time) {
      return fail(Error::invalid("a point's time is not in the chunk's time column"));
    }
    const std::int64_t index = it - times.begin();
    put_step(w, static_cast<std::uint64_t>(index - prev_index), last_step);
    prev_index = index;
    put_value(w, state, p.value);
  }
  return {};
}

Status get_points(BitReader& r, std::uint64_t count, std::span<const TimeNs> times, XorState& state,
                  std::vector<Point>& out, std::uint64_t* last_step = nullptr) {
  std::uint64_t index = std::numeric_limits<std::uint64_t>::max();  // -1
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t step = 0;
    if (!get_step(r, step, last_step)) return fail(corrupt("truncated point"));
    index += step;
    if (index >= times.size()) return fail(corrupt("point outside its time column"));
    Point p{times[index], 0};
    if (!get_value(r, state, p.value)) return fail(corrupt("truncated value"));
    out.push_back(p);
  }
  return {};
}

std::vector<Point> sorted_by_time(std::span<const Point> points) {
  std::vector<Point> v(points.begin(), points.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const Point& a, const Point& b) { return a.time < b.time; });
  return v;
}

}  // namespace

void put_value(BitWriter& w, XorState& s, double value) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  if (!s.started) {
    w.put(bits, 64);
    s = XorState{bits, -1, 0, true};
    return;
  }
  const std::uint64_t x = bits ^ s.prev;
  s.prev = bits;
  if (x == 0) return w.bit(false);
  w.bit(true);
  const int lead = std::min(std::countl_zero(x), 31);
  const int trail = std::countr_zero(x);
  if (s.lead >= 0 && lead >= s.lead && trail >= s.trail) {
    w.bit(false);
    return w.put(x >> s.trail, 64 - s.lead - s.trail);
  }
  const int len = 64 - lead - trail;
  w.bit(true);
  w.put(static_cast<std::uint64_t>(lead), 5);
  w.put(static_cast<std::uint64_t>(len - 1), 6);
  w.put(x >> trail, len);
  s.lead = lead;
  s.trail = trail;
}

bool get_value(BitReader& r, XorState& s, double& value) {
  if (!s.started) {
    std::uint64_t bits = 0;
    if (!r.get(64, bits)) return false;
    s = XorState{bits, -1, 0, true};
    value = std::bit_cast<double>(bits);
    return true;
  }
  const std::uint64_t control = r.peek(2);
  if ((control & 0b10) == 0) {
    if (!r.skip(1)) return false;
  } else {
    if (!r.skip(2)) return false;
    if (control == 0b11) {
      std::uint64_t header = 0;
      if (!r.get(11, header)) return false;
      const std::uint64_t lead = header >> 6;
      const std::uint64_t len = (header & 0x3f) + 1;
      if (lead + len > 64) return false;
      s.lead = static_cast<int>(lead);
      s.trail = static_cast<int>(64 - lead - len);
    } else if (s.lead < 0) {
      return false;  // "same window" before any window
    }
    std::uint64_t x = 0;
    if (!r.get(64 - s.lead - s.trail, x)) return false;
    s.prev ^= x << s.trail;
  }
  value = std::bit_cast<double>(s.prev);
  return true;
}

std::string encode_times(std::span<const TimeNs> times) {
  std::string out;
  encode_times_into(out, times);
  return out;
}

Result<std::vector<TimeNs>> decode_times(std::string_view data) {
  std::vector<TimeNs> out;
  CARDIAC_TRY(decode_times_into(data, out));
  return out;
}

Status decode_times_into(std::string_view data, std::vector<TimeNs>& out) {
  out.clear();
  if (data.empty() || static_cast<std::uint8_t>(data.front()) != kTimesFormat) {
    return fail(corrupt("not a time column"));
  }
  data.remove_prefix(1);
  std::uint64_t count = 0;
  if (!get_varint(data, count)) return fail(corrupt("truncated time column header"));
  BitReader r(data);
  // Every instant takes at least one bit (the first 64): a count beyond that is corrupt, and
  // checking it first keeps a damaged header from allocating gigabytes.
  if (count > r.bits_left()) return fail(corrupt("time column count exceeds its data"));
  out.reserve(count);
  std::uint64_t prev = 0;
  std::uint64_t prev_delta = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t t = 0;
    if (i == 0) {
      if (!r.get(64, t)) return fail(corrupt("truncated time column"));
    } else {
      std::uint64_t z = 0;
      if (!get_dod(r, z)) return fail(corrupt("truncated time column"));
      prev_delta += static_cast<std::uint64_t>(unzigzag(z));
      t = prev + prev_delta;
      if (static_cast<TimeNs>(t) <= static_cast<TimeNs>(prev)) {
        return fail(corrupt("time column not ascending"));
      }
    }
    out.push_back(static_cast<TimeNs>(t));
    prev = t;
  }
  return {};
}

Result<std::string> encode_chunk(std::span<const Point> points, std::span<const TimeNs> times) {
  std::string out;
  out.push_back(static_cast<char>(kChunkRepeatFormat));
  put_varint(out, points.size());
  BitWriter w(out);
  XorState state;
  std::uint64_t last_step = kFirstRepeatStep;
  CARDIAC_TRY(put_points(w, sorted_by_time(points), times, state, &last_step));
  return out;
}

Result<std::vector<Point>> decode_chunk(std::string_view data, std::span<const TimeNs> times) {
  std::vector<Point> out;
  CARDIAC_TRY(decode_chunk_into(data, times, out));
  return out;
}

Status decode_chunk_into(std::string_view data, std::span<const TimeNs> times,
                         std::vector<Point>& out) {
  const auto format = data.empty() ? 0 : static_cast<std::uint8_t>(data.front());
  if (format != kChunkFormat && format != kChunkRepeatFormat) return fail(corrupt("not a chunk"));
  data.remove_prefix(1);
  std::uint64_t count = 0;
  if (!get_varint(data, count)) return fail(corrupt("truncated chunk header"));
  BitReader r(data);
  if (count > r.bits_left() / 2) return fail(corrupt("chunk count exceeds its data"));
  const std::size_t before = out.size();
  // Grown geometrically: an exact reserve per chunk would copy the whole series every time.
  if (out.capacity() < before + count) out.reserve(std::max(before + count, 2 * out.capacity()));
  XorState state;
  std::uint64_t last_step = kFirstRepeatStep;
  auto got =
      get_points(r, count, times, state, out, format == kChunkRepeatFormat ? &last_step : nullptr);
  if (!got) out.resize(before);
  return got;
}

// Layout: format byte; varint flags; varint length + the row's time column; unless kSameList,
// varint series count and per series varint metric id + zigzag varint gpu; then one bit stream
// with, per series of the list, which instants it has (see kTailMaskFormat; format 3: '0'
// every instant, or '1' + 32-bit count + the points' instant steps) and its values, continuing
// each series' XorState.
Result<std::string> encode_tail_row(std::span<const SeriesPoints> batch, TailChain& chain) {
  // The sampler's points come in time order: a series is copied to be sorted only when they do
  // not (a copy per series and flush was a tenth of the agent's allocations).
  std::size_t unsorted = 0;
  const auto by_time = [](const Point& a, const Point& b) { return a.time < b.time; };
  for (const auto& s : batch) {
    if (!std::is_sorted(s.points.begin(), s.points.end(), by_time)) ++unsorted;
  }
  std::vector<SeriesPoints> resorted;
  resorted.reserve(unsorted);  // no reallocation: `sorted` points into it
  std::vector<TimeNs> times;
  std::vector<const SeriesPoints*> sorted;
  sorted.reserve(batch.size());
  for (const auto& s : batch) {
    if (s.points.empty()) continue;  // a series not in this flush
    if (std::is_sorted(s.points.begin(), s.points.end(), by_time)) {
      sorted.push_back(&s);
    } else {
      resorted.push_back({s.key, sorted_by_time(s.points)});
      sorted.push_back(&resorted.back());
    }
    for (const Point& p : s.points) times.push_back(p.time);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const SeriesPoints* a, const SeriesPoints* b) { return a->key < b->key; });

  std::vector<SeriesKey> list;
  list.reserve(sorted.size());
  for (const auto* s : sorted) list.push_back(s->key);
  const bool same_list = !chain.last_list.empty() && list == chain.last_list;

  std::string out;
  out.push_back(static_cast<char>(kTailMaskFormat));
  put_varint(out, same_list ? kSameList : 0);
  std::string column;
  encode_times_into(column, times);
  put_varint(out, column.size());
  out += column;
  if (!same_list) {
    put_varint(out, list.size());
    for (const auto& k : list) {
      put_varint(out, static_cast<std::uint64_t>(k.metric_id));
      put_varint(out, zigzag(k.gpu));
    }
  }
  // The chain advances in place: a copy of it per flush was as many allocations as it has series.
  BitWriter w(out);
  std::optional<std::uint64_t> last_mask;
  for (const auto* s : sorted) {
    XorState& state = chain.values[s->key];
    if (s->points.size() == times.size()) {
      w.bit(false);
      CARDIAC_TRY(put_points(w, s->points, times, state));
      continue;
    }
    // Series read at other moments than the rest (the host's) leave the others a subset of the
    // row's instants: the same few masks, where counts and steps cost ~45 bits a series.
    std::optional<std::uint64_t> mask;
    if (times.size() <= kMaxMaskInstants) {
      mask = 0;
      for (const Point& p : s->points) {
        const auto index = static_cast<std::size_t>(
            std::lower_bound(times.begin(), times.end(), p.time) - times.begin());
        const std::uint64_t bit = std::uint64_t{1} << index;
        if ((*mask & bit) != 0) {  // two points at one instant: only steps say that
          mask.reset();
          break;
        }
        *mask |= bit;
      }
    }
    if (!mask) {
      w.put(0b111, 3);
      w.put(s->points.size(), 32);
      CARDIAC_TRY(put_points(w, s->points, times, state));
      continue;
    }
    if (mask == last_mask) {
      w.put(0b10, 2);
    } else {
      w.put(0b110, 3);
      w.put(*mask, static_cast<int>(times.size()));
      last_mask = mask;
    }
    for (const Point& p : s->points) put_value(w, state, p.value);
  }
  chain.last_list = std::move(list);
  return out;
}

Result<std::vector<SeriesPoints>> decode_tail_row(std::string_view data, TailChain& chain) {
  std::vector<SeriesPoints> out;
  std::vector<TimeNs> times;
  CARDIAC_TRY(decode_tail_row_into(data, chain, out, times));
  return out;
}

Status decode_tail_row_into(std::string_view data, TailChain& chain, std::vector<SeriesPoints>& out,
                            std::vector<TimeNs>& times) {
  const auto format = data.empty() ? 0 : static_cast<std::uint8_t>(data.front());
  if (format != kTailFormat && format != kTailMaskFormat) return fail(corrupt("not a tail row"));
  data.remove_prefix(1);
  std::uint64_t flags = 0;
  std::uint64_t column_size = 0;
  if (!get_varint(data, flags) || !get_varint(data, column_size) || column_size > data.size()) {
    return fail(corrupt("truncated tail row header"));
  }
  CARDIAC_TRY(decode_times_into(data.substr(0, column_size), times));
  data.remove_prefix(column_size);
  if ((flags & kSameList) != 0) {
    if (chain.last_list.empty()) return fail(corrupt("tail row continues an unknown row"));
  } else {
    std::uint64_t n = 0;
    if (!get_varint(data, n) || n > data.size()) return fail(corrupt("truncated series list"));
    chain.last_list.clear();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t metric = 0;
      std::uint64_t gpu = 0;
      if (!get_varint(data, metric) || !get_varint(data, gpu)) {
        return fail(corrupt("truncated series list"));
      }
      chain.last_list.push_back({static_cast<std::int64_t>(metric), unzigzag(gpu)});
    }
  }
  // The series' vectors of the last row decoded into `out` are reused: a seal decodes every
  // row of the tail (a row a second) several times, and a fresh vector per series and row was
  // millions of allocations a seal.
  out.resize(chain.last_list.size());
  std::size_t at = 0;
  BitReader r(data);
  std::optional<std::uint64_t> last_mask;
  for (const auto& key : chain.last_list) {
    bool partial = false;
    if (!r.bit(partial)) return fail(corrupt("truncated tail row"));
    std::uint64_t count = times.size();
    SeriesPoints& s = out[at++];
    s.key = key;
    s.points.clear();
    if (partial && format == kTailMaskFormat) {
      const std::uint64_t code = r.peek(2);
      std::optional<std::uint64_t> mask;
      if ((code & 0b10) == 0) {  // '10': the previous mask
        if (!r.skip(1) || !last_mask) return fail(corrupt("tail row mask before any mask"));
        mask = last_mask;
      } else if (code == 0b10) {  // '110': a new mask
        std::uint64_t m = 0;
        if (!r.skip(2) || times.size() > kMaxMaskInstants ||
            !r.get(static_cast<int>(times.size()), m)) {
          return fail(corrupt("truncated tail row mask"));
        }
        mask = m;
        last_mask = m;
      } else if (!r.skip(2) || !r.get(32, count)) {  // '111': count and steps
        return fail(corrupt("truncated tail row"));
      }
      if (mask) {
        XorState& state = chain.values[key];
        for (std::size_t i = 0; i < times.size(); ++i) {
          if ((*mask & (std::uint64_t{1} << i)) == 0) continue;
          Point p{times[i], 0};
          if (!get_value(r, state, p.value)) return fail(corrupt("truncated value"));
          s.points.push_back(p);
        }
        continue;
      }
    } else if (partial && !r.get(32, count)) {
      return fail(corrupt("truncated tail row"));
    }
    if (count > r.bits_left() / 2) return fail(corrupt("tail row count exceeds its data"));
    s.points.reserve(count);
    CARDIAC_TRY(get_points(r, count, times, chain.values[key], s.points));
  }
  return {};
}

}  // namespace cardiac::store
