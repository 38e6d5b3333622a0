// SPDX-License-Identifier: Apache-2.0
// Tests for the sample codec: round trips of odd values and times, and refusing bad blobs.
#include "store/chunk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace cardiac::store {
namespace {

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;

std::vector<TimeNs> column_of(const std::vector<Point>& points) {
  std::vector<TimeNs> t;
  for (const Point& p : points) t.push_back(p.time);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

// Encodes the points (already in time order) with their own time column, decodes both and
// checks every time and every value bit.
void expect_round_trip(const std::vector<Point>& points) {
  const auto times = column_of(points);
  const std::string column = encode_times(times);
  auto decoded_times = decode_times(column);
  ASSERT_TRUE(decoded_times) << decoded_times.error().what();
  EXPECT_EQ(*decoded_times, times);
  auto chunk = encode_chunk(points, times);
  ASSERT_TRUE(chunk) << chunk.error().what();
  auto back = decode_chunk(*chunk, *decoded_times);
  ASSERT_TRUE(back) << back.error().what();
  ASSERT_EQ(back->size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ((*back)[i].time, points[i].time) << i;
    EXPECT_EQ(std::bit_cast<std::uint64_t>((*back)[i].value),
              std::bit_cast<std::uint64_t>(points[i].value))
        << i << ": " << points[i].value;
  }
}

TEST(StoreChunk, RegularSeriesRoundTripsAndIsSmall) {
  std::vector<Point> points;
  for (int i = 0; i < 600; ++i) points.push_back({kT0 + i * kNsPerSec, 60.0 + (i * 7) % 5});
  expect_round_trip(points);
  auto chunk = encode_chunk(points, column_of(points));
  ASSERT_TRUE(chunk);
  EXPECT_LT(chunk->size(), 600u * 2);  // well under 2 bytes per sample
  std::vector<Point> constant(600, Point{});
  for (int i = 0; i < 600; ++i) constant[static_cast<std::size_t>(i)] = {kT0 + i * kNsPerSec, 7};
  auto small = encode_chunk(constant, column_of(constant));
  ASSERT_TRUE(small);
  EXPECT_LT(small->size(), 600u / 4 + 16);  // two bits per sample
}

// A GPU's series against a seal's time column: the host's instants come between the GPU's
// every 5 seconds, so every sixth step skips one.
TEST(StoreChunk, SeriesThatSkipTheSameInstantsPayTwoBitsASkip) {
  std::vector<TimeNs> times;
  std::vector<Point> points;
  for (int i = 0; i < 600; ++i) {
    times.push_back(kT0 + i * kNsPerSec);
    points.push_back({times.back(), 56});
    if (i % 5 == 4) times.push_back(kT0 + i * kNsPerSec + kNsPerSec / 3);  // the host's
  }
  auto chunk = encode_chunk(points, times);
  ASSERT_TRUE(chunk) << chunk.error().what();
  // 3 bytes of header, 64 bits for the first value, a bit per value after it, a bit per step to
  // the next instant and two per step over the host's (119): 176 bytes. Format 2 paid 10 bits
  // per skip: 295.
  EXPECT_LE(chunk->size(), 176u);
  auto back = decode_chunk(*chunk, times);
  ASSERT_TRUE(back) << back.error().what();
  ASSERT_EQ(back->size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) EXPECT_EQ((*back)[i].time, points[i].time) << i;
}

TEST(StoreChunk, AnyStepsBetweenInstantsRoundTrip) {
  // Steps that repeat, change, come back, need 8 or 32 bits, or name the same instant again.
  const std::uint64_t steps[] = {1, 2, 2, 1, 3, 3, 2, 255, 256, 256, 70000, 1, 0, 2, 9, 9, 1, 0, 0};
  std::vector<TimeNs> times;
  for (int i = 0; i < 80000; ++i) times.push_back(kT0 + i * 1000);
  std::vector<Point> points;
  std::int64_t index = -1;
  double v = 3;
  for (const std::uint64_t step : steps) {
    index += static_cast<std::int64_t>(step);
    points.push_back({times[static_cast<std::size_t>(index)], v += 0.25});
  }
  auto chunk = encode_chunk(points, times);
  ASSERT_TRUE(chunk) << chunk.error().what();
  auto back = decode_chunk(*chunk, times);
  ASSERT_TRUE(back) << back.error().what();
  ASSERT_EQ(back->size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ((*back)[i].time, points[i].time) << i;
    EXPECT_EQ((*back)[i].value, points[i].value) << i;
  }
}

TEST(StoreChunk, ChunksOfTheFirstFormatStillDecode) {
  // Format 2, written by stores before format 5: points at instants 0, 2, 3 and 300 of the
  // column (steps '0', '10' + 8 bits, '0', '11' + 32 bits), values 7, 7, 8, 8.
  const std::string v2(
      "\x02\x04\x20\x0e\x00\x00\x00\x00\x00\x00\x40\x46\xa0\xff\x00\x00\x01"
      "\x29\x00",
      19);
  std::vector<TimeNs> times;
  for (int i = 0; i < 301; ++i) times.push_back(kT0 + i * kNsPerSec);
  auto back = decode_chunk(v2, times);
  ASSERT_TRUE(back) << back.error().what();
  ASSERT_EQ(back->size(), 4u);
  const std::size_t at[] = {0, 2, 3, 300};
  const double values[] = {7, 7, 8, 8};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*back)[i].time, times[at[i]]) << i;
    EXPECT_EQ((*back)[i].value, values[i]) << i;
  }
}

TEST(StoreChunk, SpecialValuesRoundTripBitForBit) {
  const double inf = std::numeric_limits<double>::infinity();
  const double values[] = {0.0,
                           -0.0,
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN(),
                           std::bit_cast<double>(std::uint64_t{0x7ff0000000000123}),  // NaN payload
                           inf,
                           -inf,
                           -1.5,
                           -1e300,
                           1e-310,  // subnormal
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           123'456'789'012.0,
                           0.1,
                           0.1,
                           0.1};
  std::vector<Point> points;
  TimeNs t = kT0;
  for (double v : values) points.push_back({t += kNsPerSec, v});
  expect_round_trip(points);
}

TEST(StoreChunk, IrregularAndHugeTimeJumpsRoundTrip) {
  const TimeNs min = std::numeric_limits<TimeNs>::min();
  const TimeNs max = std::numeric_limits<TimeNs>::max();
  std::vector<Point> points = {{min, 1},
                               {min + 1, 2},
                               {-5, 3},
                               {0, 4},
                               {kT0, 5},
                               {kT0 + 1'000'123, 6},           // jitter
                               {kT0 + 2'000'007'000, 7},       // a late sample
                               {kT0 + 2'000'007'001, 8},       // 1 ns later
                               {kT0 + 86'400 * kNsPerSec, 9},  // a day's gap
                               {max - 1, 10},
                               {max, 11}};
  expect_round_trip(points);
  expect_round_trip({});
  expect_round_trip({{kT0, 42}});
}

TEST(StoreChunk, UnsortedPointsAndRepeatedInstantsComeBackInTimeOrder) {
  std::vector<Point> points = {{kT0 + 2, 3}, {kT0, 1}, {kT0 + 2, 4}, {kT0 + 1, 2}};
  const auto times = column_of(points);
  auto chunk = encode_chunk(points, times);
  ASSERT_TRUE(chunk);
  auto back = decode_chunk(*chunk, times);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 4u);
  EXPECT_EQ((*back)[0].value, 1);
  EXPECT_EQ((*back)[1].value, 2);
  EXPECT_EQ((*back)[2].value, 3);  // stable: the first of the two at kT0 + 2
  EXPECT_EQ((*back)[3].value, 4);
  EXPECT_EQ((*back)[3].time, kT0 + 2);
}

TEST(StoreChunk, PointOutsideTheColumnIsRefused) {
  std::vector<Point> points = {{kT0, 1}, {kT0 + 5, 2}};
  const std::vector<TimeNs> times = {kT0};
  EXPECT_FALSE(encode_chunk(points, times));
}

TEST(StoreChunk, TruncatedOrCorruptBlobsAreErrorsNotCrashes) {
  std::vector<Point> points;
  for (int i = 0; i < 200; ++i) {
    points.push_back({kT0 + i * kNsPerSec + (i * 7919) % 1000, std::sin(i) * 1e6});
  }
  const auto times = column_of(points);
  const std::string column = encode_times(times);
  const std::string chunk = encode_chunk(points, times).value();
  for (std::size_t n = 0; n < column.size(); ++n) {
    EXPECT_FALSE(decode_times(column.substr(0, n))) << n;
  }
  for (std::size_t n = 0; n < chunk.size(); ++n) {
    EXPECT_FALSE(decode_chunk(chunk.substr(0, n), times)) << n;
  }
  // Wrong kind of blob, a count far beyond the data, a shorter column than the chunk needs.
  EXPECT_FALSE(decode_chunk(column, times));
  EXPECT_FALSE(decode_times(chunk));
  EXPECT_FALSE(decode_chunk(std::string("\x02\xff\xff\xff\xff\x0f", 6), times));
  EXPECT_FALSE(decode_times(std::string("\x01\xff\xff\xff\xff\x0f", 6)));
  EXPECT_FALSE(decode_chunk(chunk, std::span<const TimeNs>(times).first(100)));
  // Flipped bits anywhere: an error or some points, never a read out of bounds (run under
  // the sanitizers in CI).
  for (std::size_t i = 1; i < chunk.size(); ++i) {
    std::string bad = chunk;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    (void)decode_chunk(bad, times);
    std::string bad_column = column;
    if (i < bad_column.size()) {
      bad_column[i] = static_cast<char>(bad_column[i] ^ 0x5a);
      (void)decode_times(bad_column);
    }
  }
}

std::vector<SeriesPoints> flush_batch(int second, int seconds, int series) {
  std::vector<SeriesPoints> batch;
  for (int s = 0; s < series; ++s) {
    SeriesPoints sp{{s / 2 + 1, s % 2 == 0 ? std::int64_t{s} : std::int64_t{-1}}, {}};
    for (int i = second; i < second + seconds; ++i) {
      sp.points.push_back({kT0 + i * kNsPerSec + 137 * i, 1000.0 + s + (i % 3)});
    }
    batch.push_back(std::move(sp));
  }
  return batch;
}

TEST(StoreChunk, TailRowsNameSharedInstantsOnceAndReadTheOlderFormat) {
  // 50 GPU series read at 5 instants, the host read between them: each GPU series has a
  // subset of the row's 10 instants, the same one.
  const TimeNs t0 = 1'700'000'000LL * kNsPerSec;
  std::vector<SeriesPoints> batch;
  for (std::int64_t m = 1; m <= 50; ++m) {
    SeriesPoints s{{m, 0}, {}};
    for (int i = 0; i < 5; ++i) s.points.push_back({t0 + i * kNsPerSec, 40.0 + m});
    batch.push_back(std::move(s));
  }
  SeriesPoints host{{99, -1}, {}};
  for (int i = 0; i < 5; ++i) host.points.push_back({t0 + i * kNsPerSec + kNsPerSec / 2, 0.5});
  batch.push_back(host);
  TailChain writer;
  const std::string first = encode_tail_row(batch, writer).value();  // full first values
  const std::string row = encode_tail_row(batch, writer).value();
  // A count and steps per series cost 45 bits or more each: over 280 bytes for these 50.
  EXPECT_LT(row.size(), 100u);
  TailChain reader;
  ASSERT_TRUE(decode_tail_row(first, reader));
  auto got = decode_tail_row(row, reader);
  ASSERT_TRUE(got) << got.error().what();
  ASSERT_EQ(got->size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ASSERT_EQ((*got)[i].points.size(), batch[i].points.size()) << i;
    for (std::size_t j = 0; j < batch[i].points.size(); ++j) {
      EXPECT_EQ((*got)[i].points[j].time, batch[i].points[j].time);
      EXPECT_EQ((*got)[i].points[j].value, batch[i].points[j].value);
    }
  }
  // Past 64 instants a row has no masks: a partial series gives its count and steps.
  std::vector<SeriesPoints> wide{{{1, 0}, {}}, {{2, 0}, {}}};
  for (int i = 0; i < 100; ++i) {
    wide[0].points.push_back({t0 + i * kNsPerSec, 1.0 * i});
    if (i % 3 != 0) wide[1].points.push_back({t0 + i * kNsPerSec, 2.0});
  }
  TailChain ww;
  TailChain wr;
  auto wide_back = decode_tail_row(encode_tail_row(wide, ww).value(), wr);
  ASSERT_TRUE(wide_back) << wide_back.error().what();
  ASSERT_EQ(wide_back->size(), 2u);
  EXPECT_EQ((*wide_back)[1].points.size(), wide[1].points.size());
  EXPECT_EQ((*wide_back)[1].points.back().time, wide[1].points.back().time);

  // Rows of schema 6's sample_tail (format 3) stay readable: with every series at every
  // instant the two formats differ in their first byte only.
  std::vector<SeriesPoints> full(batch.begin(), batch.end() - 1);
  TailChain w3;
  std::string old = encode_tail_row(full, w3).value();
  old[0] = '\x03';
  TailChain r3;
  auto back = decode_tail_row(old, r3);
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->size(), full.size());
}

// Points that come out of time order are sorted in the row (the sampler's come in order and are
// not copied); the series keep their place in the chain; a series without points is left out.
TEST(StoreChunk, TailRowsSortASeriesWhosePointsComeOutOfOrder) {
  TailChain writer;
  TailChain reader;
  for (int flush = 0; flush < 2; ++flush) {
    auto batch = flush_batch(flush * 4, 4, 3);
    std::reverse(batch[1].points.begin(), batch[1].points.end());
    batch.push_back({{99, 0}, {}});  // a series with no point in this flush: left out
    auto row = encode_tail_row(batch, writer);
    ASSERT_TRUE(row) << row.error().what();
    auto back = decode_tail_row(*row, reader);
    ASSERT_TRUE(back) << back.error().what();
    const auto want = flush_batch(flush * 4, 4, 3);
    ASSERT_EQ(back->size(), want.size());
    for (const auto& w : want) {
      const auto got = std::find_if(back->begin(), back->end(),
                                    [&](const SeriesPoints& b) { return b.key == w.key; });
      ASSERT_NE(got, back->end());
      ASSERT_EQ(got->points.size(), w.points.size());
      for (std::size_t i = 0; i < w.points.size(); ++i) {
        EXPECT_EQ(got->points[i].time, w.points[i].time);
        EXPECT_EQ(got->points[i].value, w.points[i].value);
      }
    }
  }
}

TEST(StoreChunk, TailRowsChainAcrossFlushes) {
  TailChain writer;
  std::vector<std::string> rows;
  rows.push_back(encode_tail_row(flush_batch(0, 5, 6), writer).value());
  rows.push_back(encode_tail_row(flush_batch(5, 5, 6), writer).value());
  auto odd = flush_batch(10, 5, 4);  // fewer series, one with a gap
  odd[1].points.erase(odd[1].points.begin() + 2);
  rows.push_back(encode_tail_row(odd, writer).value());
  rows.push_back(encode_tail_row(odd, writer).value());
  EXPECT_LT(rows[1].size(), rows[0].size());  // same list, values continue the chain

  TailChain reader;
  std::vector<std::vector<SeriesPoints>> got;
  for (const auto& r : rows) {
    auto decoded = decode_tail_row(r, reader);
    ASSERT_TRUE(decoded) << decoded.error().what();
    got.push_back(std::move(*decoded));
  }
  const auto expect_same = [](const std::vector<SeriesPoints>& a, std::vector<SeriesPoints> b) {
    std::sort(b.begin(), b.end(),
              [](const SeriesPoints& x, const SeriesPoints& y) { return x.key < y.key; });
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].key, b[i].key);
      ASSERT_EQ(a[i].points.size(), b[i].points.size());
      for (std::size_t j = 0; j < a[i].points.size(); ++j) {
        EXPECT_EQ(a[i].points[j].time, b[i].points[j].time);
        EXPECT_EQ(a[i].points[j].value, b[i].points[j].value);
      }
    }
  };
  expect_same(got[0], flush_batch(0, 5, 6));
  expect_same(got[1], flush_batch(5, 5, 6));
  expect_same(got[2], odd);
  expect_same(got[3], odd);

  // Decoded into one kept vector, row after row (as a seal reads the tail): the same series.
  TailChain kept_chain;
  std::vector<SeriesPoints> kept;
  std::vector<TimeNs> times;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(decode_tail_row_into(rows[i], kept_chain, kept, times));
    expect_same(kept, got[i]);
  }

  // A row that continues a chain cannot be read without it.
  TailChain fresh;
  EXPECT_FALSE(decode_tail_row(rows[3], fresh));
  for (std::size_t n = 0; n < rows[0].size(); ++n) {
    TailChain c;
    EXPECT_FALSE(decode_tail_row(rows[0].substr(0, n), c)) << n;
  }
}

}  // namespace
}  // namespace cardiac::store
