// SPDX-License-Identifier: Apache-2.0
// The sample codec: Gorilla-style bit packing of timestamps (delta of deltas) and doubles (XOR
// with the previous value), for sealed chunks and for the raw tail's rows. Pure: no SQLite.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::store {

struct Point {
  TimeNs time = 0;
  double value = 0;
};

// A series as the chunk tables key it: the host is kHostGpu there, never NULL.
struct SeriesKey {
  std::int64_t metric_id = 0;
  std::int64_t gpu = 0;
  auto operator<=>(const SeriesKey&) const = default;
};

// A time column: every distinct sampling instant of a seal (or of one tail row), ascending.
// Many series share it, so the jitter of the agent's clock is paid once per instant rather than
// once per sample. Precondition: `times` is sorted ascending without repeats; any int64 values
// (negative, huge jumps) are allowed.
[[nodiscard]] std::string encode_times(std::span<const TimeNs> times);
// Fails with a parse error on a truncated, corrupt or unsorted column; never reads past `data`.
[[nodiscard]] Result<std::vector<TimeNs>> decode_times(std::string_view data);
// The same into `out` (replaced), reusing its storage.
[[nodiscard]] Status decode_times_into(std::string_view data, std::vector<TimeNs>& out);

// One series' chunk against a time column: per point, the step to its instant's index in
// `times` and its value XORed with the previous one. Every point's time must be in `times`;
// points are stored in time order (the input is stably sorted by time first). Values round
// trip bit for bit (NaN payloads, -0.0, infinities). Invalid argument when a time is missing.
[[nodiscard]] Result<std::string> encode_chunk(std::span<const Point> points,
                                               std::span<const TimeNs> times);
// The points of a chunk, ascending in time. A parse error when the blob is truncated, corrupt
// or points outside `times`; never reads past `data`.
[[nodiscard]] Result<std::vector<Point>> decode_chunk(std::string_view data,
                                                      std::span<const TimeNs> times);
// decode_chunk() appending to `out` (a reader gathering many chunks of one series copies each
// point once); on failure `out` is left as it was.
[[nodiscard]] Status decode_chunk_into(std::string_view data, std::span<const TimeNs> times,
                                       std::vector<Point>& out);

// The state a tail row continues from: each series' previous value (so a 5 s batch costs about
// what the same samples cost in a chunk) and the previous row's series list (so an unchanged
// list is one flag). Rows of one writer's segment must be decoded in the order they were encoded,
// each with the state the previous one left.
struct XorState {
  std::uint64_t prev = 0;
  int lead = -1;  // -1: no window yet
  int trail = 0;
  bool started = false;
};
struct TailChain {
  std::map<SeriesKey, XorState> values;
  std::vector<SeriesKey> last_list;
};

struct SeriesPoints {
  SeriesKey key;
  std::vector<Point> points;
};

// One tail row holding every series of one flush (a series with no points is left out); advances
// `chain`. A caller that may fail to
// store the row keeps a copy of the chain to encode the batch again from (SampleWriter does).
// It fails only on a bug (every point's instant is in the row's column), and `chain` may then
// have advanced part of the way.
[[nodiscard]] Result<std::string> encode_tail_row(std::span<const SeriesPoints> batch,
                                                  TailChain& chain);
// The series of one tail row (points in time order). A parse error on a truncated or corrupt
// row, or one that does not continue `chain`; `chain` is then left unspecified.
[[nodiscard]] Result<std::vector<SeriesPoints>> decode_tail_row(std::string_view data,
                                                                TailChain& chain);
// The same into `out`, whose series it replaces, reusing their vectors; `times` is scratch for the
// row's time column. On failure `out` holds a part of the row.
[[nodiscard]] Status decode_tail_row_into(std::string_view data, TailChain& chain,
                                          std::vector<SeriesPoints>& out,
                                          std::vector<TimeNs>& times);

}  // namespace cardiac::store
