// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the store's sample codec (src/store/chunk.h): decode_times, decode_chunk and
// decode_tail_row on arbitrary bytes. Each must fail or decode without a sanitizer report, and
// what decodes must encode again to blobs that decode to the same values, bit for bit.
//
// The first byte picks the decoder (modulo 3); the rest is split into parts, each a 2-byte
// big-endian length and that many bytes, except that a last part may take the rest without one:
//   0  one time column
//   1  a time column, then a chunk against it
//   2  a sequence of tail rows of one segment, decoded in order with one TailChain
//
// CARDIAC_FUZZ_WRITE_SEEDS=DIR build-fuzz/fuzz/fuzz_chunk writes seed inputs in this format,
// encoded from a few sample series, into DIR and exits (scripts/fuzz.sh and fuzz/corpus/chunk/).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "store/chunk.h"

namespace {

using namespace cardiac;
using store::Point;
using store::SeriesPoints;

// Splits `in` into at most `max_parts` parts, each a 2-byte big-endian length and that many
// bytes (fewer at the end of the input); a last part takes the rest without a length.
std::vector<std::string_view> split_parts(std::string_view in, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts && in.size() >= 2) {
    const std::size_t len =
        (std::size_t{static_cast<std::uint8_t>(in[0])} << 8) | static_cast<std::uint8_t>(in[1]);
    in.remove_prefix(2);
    const std::size_t take = std::min(len, in.size());
    parts.push_back(in.substr(0, take));
    in.remove_prefix(take);
  }
  if (!in.empty()) parts.push_back(in);
  return parts;
}

// A part copied into a heap buffer of exactly its size, so that ASan sees a read past its end
// (a std::string may have spare capacity and always has a terminating NUL).
class ExactCopy {
 public:
  explicit ExactCopy(std::string_view part) : bytes_(new char[part.size()]), size_(part.size()) {
    std::copy(part.begin(), part.end(), bytes_.get());
  }
  [[nodiscard]] std::string_view view() const { return {bytes_.get(), size_}; }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t size_;
};

bool same_points(const std::vector<Point>& a, const std::vector<Point>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].time != b[i].time) return false;
    if (std::bit_cast<std::uint64_t>(a[i].value) != std::bit_cast<std::uint64_t>(b[i].value)) {
      return false;
    }
  }
  return true;
}

bool ascending(const std::vector<Point>& points) {
  return std::is_sorted(points.begin(), points.end(),
                        [](const Point& a, const Point& b) { return a.time < b.time; });
}

std::vector<TimeNs> check_times(std::string_view blob) {
  auto times = store::decode_times(ExactCopy(blob).view());
  if (!times) return {};
  // Strictly ascending (chunk.h), and encoding them again gives a column that decodes the same.
  CARDIAC_FUZZ_CHECK(std::adjacent_find(times->begin(), times->end(),
                                        [](TimeNs a, TimeNs b) { return a >= b; }) == times->end());
  const auto again = store::decode_times(store::encode_times(*times));
  CARDIAC_FUZZ_CHECK(again.has_value() && *again == *times);
  return *times;
}

void check_chunk(std::string_view times_blob, std::string_view chunk_blob) {
  const std::vector<TimeNs> times = check_times(times_blob);
  const ExactCopy copy(chunk_blob);
  auto points = store::decode_chunk(copy.view(), times);
  if (!points) return;
  CARDIAC_FUZZ_CHECK(ascending(*points));
  for (const Point& p : *points) {
    CARDIAC_FUZZ_CHECK(std::binary_search(times.begin(), times.end(), p.time));
  }
  auto encoded = store::encode_chunk(*points, times);
  CARDIAC_FUZZ_CHECK(encoded.has_value());
  const auto again = store::decode_chunk(*encoded, times);
  CARDIAC_FUZZ_CHECK(again.has_value() && same_points(*again, *points));
}

// A row's series in an order that does not depend on the order the row listed them in (the
// encoder sorts its batch by key; a corrupt row may list a key twice or out of order).
std::vector<SeriesPoints> canonical(std::vector<SeriesPoints> row) {
  std::stable_sort(row.begin(), row.end(), [](const SeriesPoints& a, const SeriesPoints& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.points.size() != b.points.size()) return a.points.size() < b.points.size();
    for (std::size_t i = 0; i < a.points.size(); ++i) {
      const Point& p = a.points[i];
      const Point& q = b.points[i];
      if (p.time != q.time) return p.time < q.time;
      const auto pv = std::bit_cast<std::uint64_t>(p.value);
      const auto qv = std::bit_cast<std::uint64_t>(q.value);
      if (pv != qv) return pv < qv;
    }
    return false;
  });
  return row;
}

bool same_row(const std::vector<SeriesPoints>& a, const std::vector<SeriesPoints>& b) {
  if (a.size() != b.size()) return false;
  const auto ca = canonical(a);
  const auto cb = canonical(b);
  for (std::size_t i = 0; i < ca.size(); ++i) {
    if (ca[i].key != cb[i].key || !same_points(ca[i].points, cb[i].points)) return false;
  }
  return true;
}

// Decodes the rows in order, then encodes what decoded with a fresh chain and decodes that with
// another: the same series (those with points) and values must come back, row after row.
void check_tail(const std::vector<std::string_view>& rows) {
  store::TailChain decode_chain;
  store::TailChain encode_chain;
  store::TailChain again_chain;
  for (const std::string_view row : rows) {
    const ExactCopy copy(row);
    auto decoded = store::decode_tail_row(copy.view(), decode_chain);
    if (!decoded) return;  // the chain is unspecified after a failure: the segment ends here
    for (const auto& s : *decoded) CARDIAC_FUZZ_CHECK(ascending(s.points));
    auto encoded = store::encode_tail_row(*decoded, encode_chain);
    CARDIAC_FUZZ_CHECK(encoded.has_value());
    const auto again = store::decode_tail_row(*encoded, again_chain);
    // A series with no points (a corrupt row may list one) is left out of an encoded row.
    std::erase_if(*decoded, [](const SeriesPoints& s) { return s.points.empty(); });
    CARDIAC_FUZZ_CHECK(again.has_value() && same_row(*again, *decoded));
  }
}

// --- seeds ---------------------------------------------------------------------------------

constexpr TimeNs kSec = 1'000'000'000;

std::string part(std::string_view bytes) {
  const std::size_t n = std::min<std::size_t>(bytes.size(), 0xffff);
  std::string out;
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(bytes.substr(0, n));
  return out;
}

// One seed file: the selector byte, then each part with its length (`rest`, when not empty,
// last and without one).
void write_seed(const std::string& dir, const std::string& name, char selector,
                const std::vector<std::string>& parts, const std::string& rest = {}) {
  std::string bytes(1, selector);
  for (const auto& p : parts) bytes += part(p);
  bytes += rest;
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

// Sampling instants every `step` from `start` with a little clock jitter every few samples.
std::vector<TimeNs> instants(TimeNs start, TimeNs step, int n) {
  std::vector<TimeNs> t;
  for (int i = 0; i < n; ++i) t.push_back(start + i * step + (i % 7 == 3 ? 1'234 : 0));
  return t;
}

std::vector<Point> series(const std::vector<TimeNs>& times, int kind) {
  std::vector<Point> p;
  for (std::size_t i = 0; i < times.size(); ++i) {
    const double x = static_cast<double>(i);
    double v = 0;
    switch (kind) {
      case 0:
        v = 65.0;
        break;  // constant temperature
      case 1:
        v = 300.0 + 25.0 * std::sin(x / 5);
        break;  // power
      case 2:
        v = i % 10 == 0 ? std::nan("") : x * 1e9;
        break;  // counter with gaps
      default:
        v = i % 2 == 0 ? -0.0 : std::numeric_limits<double>::infinity();
        break;
    }
    if (kind == 2 && i % 3 == 1) continue;  // a series that skips instants
    p.push_back({times[i], v});
  }
  return p;
}

int write_seeds(const std::string& dir) {
  const auto regular = instants(1'700'000'000 * kSec, kSec, 60);
  const auto odd = std::vector<TimeNs>{std::numeric_limits<TimeNs>::min(), -5, 0, 7,
                                       std::numeric_limits<TimeNs>::max()};
  write_seed(dir, "times-regular", 0, {}, store::encode_times(regular));
  write_seed(dir, "times-odd", 0, {}, store::encode_times(odd));
  for (int kind = 0; kind < 4; ++kind) {
    const auto chunk = store::encode_chunk(series(regular, kind), regular);
    if (!chunk) return 1;
    write_seed(dir, "chunk-" + std::to_string(kind), 1, {store::encode_times(regular)}, *chunk);
  }
  // Three 5 s flushes of four series on two GPUs, the last one with a changed series list.
  store::TailChain chain;
  std::vector<std::string> rows;
  for (int flush = 0; flush < 3; ++flush) {
    const auto t = instants((1'700'000'000 + 5 * flush) * kSec, kSec, 5);
    std::vector<SeriesPoints> batch;
    for (int gpu = 0; gpu < 2; ++gpu) {
      for (int kind = 0; kind < (flush == 2 ? 3 : 4); ++kind) {
        batch.push_back({{kind + 1, gpu}, series(t, kind)});
      }
    }
    auto row = store::encode_tail_row(batch, chain);
    if (!row) return 1;
    rows.push_back(*row);
  }
  write_seed(dir, "tail-segment", 2, rows);
  write_seed(dir, "tail-one-row", 2, {rows[0]});
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cardiac::fuzz::write_seeds_if_asked(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in = fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      check_times(in);
      break;
    case 1: {
      const auto parts = split_parts(in, 2);
      if (parts.size() == 2) check_chunk(parts[0], parts[1]);
      break;
    }
    default:
      check_tail(split_parts(in, 16));
      break;
  }
  return 0;
}
