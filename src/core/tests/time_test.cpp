// SPDX-License-Identifier: Apache-2.0
// Tests for timestamp, duration and size formatting, and the manual clock.
#include "core/time.h"
#include "core/clock.h"
#include "core/units.h"

#include <gtest/gtest.h>

namespace cardiac {
namespace {

TEST(Time, Iso8601IsUtcWithMilliseconds) {
  EXPECT_EQ(format_iso8601(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_iso8601(1'700'000'000'123'000'000), "2023-11-14T22:13:20.123Z");
}

TEST(Time, Durations) {
  EXPECT_EQ(format_duration(450 * kNsPerMs), "450 ms");
  EXPECT_EQ(format_duration(3'200 * kNsPerMs), "3.2 s");
  EXPECT_EQ(format_duration(3725 * kNsPerSec), "1h 02m");
}

TEST(Units, Bytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512ull << 20), "512.0 MiB");
  EXPECT_EQ(format_bytes(80ull << 30), "80.0 GiB");
}

TEST(Clock, ManualClockMovesOnlyWhenTold) {
  ManualClock clock(100);
  EXPECT_EQ(clock.now(), 100);
  clock.advance(5);
  EXPECT_EQ(clock.monotonic(), 105);
}

}  // namespace
}  // namespace cardiac
