// SPDX-License-Identifier: Apache-2.0
// Bars, sparklines and text cells, with values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "top/glyphs.h"
#include "top/text.h"

namespace cardiac::top {
namespace {

TEST(Bar, FillsEighthsOfCells) {
  EXPECT_EQ(bar(0.5, 4, true), "██░░");
  // 0.3 of 4 cells = 9.6 eighths, rounded to 10: one full cell and 2/8 of the next.
  EXPECT_EQ(bar(0.3, 4, true), "█▎░░");
  // 0.97 of 32 eighths = 31.04 → 31: three full cells and 7/8.
  EXPECT_EQ(bar(0.97, 4, true), "███▉");
  EXPECT_EQ(bar(1.0, 4, true), "████");
  EXPECT_EQ(bar(0.0, 4, true), "░░░░");
}

TEST(Bar, ClampsAndSurvivesNaN) {
  EXPECT_EQ(bar(1.7, 4, true), "████");
  EXPECT_EQ(bar(-0.2, 3, true), "░░░");
  EXPECT_EQ(bar(std::nan(""), 3, true), "░░░");
}

TEST(Bar, AsciiRoundsToWholeCells) {
  EXPECT_EQ(bar(0.3, 4, false), "#...");  // 1.2 cells → 1
  EXPECT_EQ(bar(0.5, 4, false), "##..");
  EXPECT_EQ(bar(0.9, 4, false), "####");  // 3.6 → 4
}

TEST(Sparkline, PicksOneOfEightLevels) {
  std::vector<std::optional<double>> v = {0, 50, 100, 25};
  // 0 → level 0, 50 → floor(4) = 4, 100 → 8 capped at 7, 25 → floor(2) = 2; padded on the left.
  EXPECT_EQ(sparkline(v, 100, 6, true), "  ▁▅█▃");
  EXPECT_EQ(sparkline(v, 100, 6, false), "  _=#:");
}

TEST(Sparkline, KeepsTheNewestValuesAndShowsGaps) {
  std::vector<std::optional<double>> v = {10, 20, 30, 90};
  // 30 → floor(2.4) = 2, 90 → floor(7.2) = 7.
  EXPECT_EQ(sparkline(v, 100, 2, true), "▃█");
  std::vector<std::optional<double>> gap = {87, std::nullopt, 43.5};
  // Against a slowdown threshold of 87: 87 → 7, 43.5 → 4.
  EXPECT_EQ(sparkline(gap, 87, 3, true), "█ ▅");
  // No scale: everything at the lowest level.
  EXPECT_EQ(sparkline(v, 0, 2, true), "▁▁");
}

TEST(Text, WidthCountsColumnsNotBytes) {
  EXPECT_EQ(display_width("▁▅█"), 3u);
  EXPECT_EQ(display_width("漢字"), 4u);
  EXPECT_EQ(display_width("e\xcc\x81"), 1u);  // e + combining acute
}

TEST(Text, FitCutsAndPads) {
  EXPECT_EQ(fit("abcdef", 4, true), "abc…");
  EXPECT_EQ(fit("abcdef", 4, false), "abc~");
  EXPECT_EQ(fit("ab", 4, true, Align::kRight), "  ab");
  EXPECT_EQ(fit("ab", 4, true), "ab  ");
  // 5 columns into 4: "漢" (2) fits in the 3 before the mark, "字" does not; one space pads.
  EXPECT_EQ(fit("漢字x", 4, true), "漢… ");
  EXPECT_EQ(fit("abc", 0, true), "");
}

TEST(Text, CleanKeepsEscapesOffTheScreen) {
  EXPECT_EQ(clean("a\tb\x1b[31m", false), "a b?[31m");
  EXPECT_EQ(clean("zürich", false), "z?rich");
  EXPECT_EQ(clean("zürich", true), "zürich");
}

}  // namespace
}  // namespace cardiac::top
