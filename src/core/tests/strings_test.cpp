// SPDX-License-Identifier: Apache-2.0
// Tests for the string helpers that every parser relies on.
#include "core/strings.h"

#include <gtest/gtest.h>

#include <array>

namespace cardiac {
namespace {

TEST(Strings, SplitKeepsEmptyFields) {
  auto parts = split("a::b", ':');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
}

TEST(Strings, SplitWsDropsRuns) {
  auto parts = split_ws("  cpu  1 2\t3 ");
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0], "cpu");
  EXPECT_EQ(parts[3], "3");
}

TEST(Strings, SplitWsIntoFillsTheLeadingFieldsOnly) {
  std::array<std::string_view, 3> f;
  EXPECT_EQ(split_ws_into("  a  bb\tc d e", f), 3U);
  EXPECT_EQ(f[0], "a");
  EXPECT_EQ(f[1], "bb");
  EXPECT_EQ(f[2], "c");
  std::array<std::string_view, 4> more;
  EXPECT_EQ(split_ws_into(" x y ", more), 2U);
  EXPECT_EQ(more[1], "y");
  EXPECT_EQ(split_ws_into("   ", more), 0U);
}

TEST(Strings, SplitLinesHandlesCrAndNoTrailingNewline) {
  auto lines = split_lines("a\r\nb\nc");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "a");
  EXPECT_EQ(lines[2], "c");
  EXPECT_TRUE(split_lines("").empty());
}

TEST(Strings, ParseNumbersStrictly) {
  EXPECT_EQ(parse_u64(" 42\n"), 42u);
  EXPECT_FALSE(parse_u64("42x"));
  EXPECT_FALSE(parse_u64(""));
  EXPECT_FALSE(parse_u64("-1"));
  EXPECT_EQ(parse_u64("0x10de", 16), 0x10deu);
  EXPECT_EQ(parse_i64("-7"), -7);
  EXPECT_DOUBLE_EQ(*parse_double("0.25"), 0.25);
  EXPECT_FALSE(parse_double("nanx"));
}

TEST(Strings, ParseDurations) {
  EXPECT_EQ(parse_duration_ns("5"), 5'000'000'000);
  EXPECT_EQ(parse_duration_ns("250ms"), 250'000'000);
  EXPECT_EQ(parse_duration_ns("1h30m"), 5'400'000'000'000);
  EXPECT_EQ(parse_duration_ns("2d"), 172'800'000'000'000);
  EXPECT_FALSE(parse_duration_ns("5 parsecs"));
  EXPECT_FALSE(parse_duration_ns("-3"));
  EXPECT_FALSE(parse_duration_ns(""));
}

}  // namespace
TEST(Strings, DurationsBeyondInt64NanosecondsAreRejected) {
  // Found by fuzzing: "200000d" is ~548 years, more nanoseconds than int64 holds.
  EXPECT_FALSE(parse_duration_ns("200000d"));
  EXPECT_FALSE(parse_duration_ns("1e300"));
  EXPECT_EQ(parse_duration_ns("100000d"), 100000LL * 86400 * 1'000'000'000);
}

}  // namespace cardiac
