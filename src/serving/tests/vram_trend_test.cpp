// SPDX-License-Identifier: Apache-2.0
#include "serving/vram_trend.h"

#include <gtest/gtest.h>

namespace cardiac::serving {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// One point every 15 s for `minutes`, from f(seconds).
template <class F>
Series series(int minutes, F f) {
  Series s;
  for (int t = 0; t <= minutes * 60; t += 15) s.emplace_back(TimeNs{t} * kNsPerSec, f(t));
  return s;
}

TEST(TheilSen, ExactLineAndOutlierResistance) {
  auto line = series(10, [](int t) { return 1000.0 + 2.0 * t; });
  auto f = theil_sen(line);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->slope_per_s, 2.0);
  EXPECT_DOUBLE_EQ(f->intercept, 1000.0);
  EXPECT_DOUBLE_EQ(f->r2, 1.0);
  // One wild point moves least squares, not the median of slopes.
  line[10].second = 1e12;
  f = theil_sen(line);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->slope_per_s, 2.0);
}

TEST(TheilSen, NeedsTwoInstants) {
  EXPECT_FALSE(theil_sen({}));
  EXPECT_FALSE(theil_sen({{5, 1.0}, {5, 2.0}}));
}

TEST(SteadyGrowth, LeakOf1GiBPerTenMinutesIsFoundWithItsRate) {
  // 40 GiB held, growing 1 GiB per 10 min with ±50 MiB of noise.
  auto s =
      series(20, [](int t) { return 40 * kGiB + t * kGiB / 600 + ((t / 15) % 2 ? 5e7 : -5e7); });
  auto g = steady_growth(s);
  ASSERT_TRUE(g);
  EXPECT_NEAR(g->fit.slope_per_s, kGiB / 600, kGiB / 600 * 0.05);
  EXPECT_GT(g->fit.r2, 0.95);
  // 20 GiB free at 1 GiB per 10 min: 200 minutes.
  auto left = seconds_to_oom(*g, 20 * kGiB);
  ASSERT_TRUE(left);
  EXPECT_NEAR(*left, 12000, 600);
}

TEST(SteadyGrowth, FlatNoisyStepAndShortSeriesDoNotFire) {
  // Flat with noise (a framework's caching allocator breathing).
  EXPECT_FALSE(steady_growth(series(30, [](int t) { return 70 * kGiB + ((t / 15) % 3) * 2e8; })));
  // One allocation step at minute 2, flat after: the late half does not grow.
  EXPECT_FALSE(steady_growth(series(30, [](int t) { return t < 120 ? 10 * kGiB : 60 * kGiB; })));
  // A real slope but only 5 minutes long (below the 10-minute span).
  EXPECT_FALSE(steady_growth(series(5, [](int t) { return 10 * kGiB + t * 1e7; })));
  // Growing, but by less than 256 MiB over the window.
  EXPECT_FALSE(steady_growth(series(20, [](int t) { return 10 * kGiB + t * 1e5; })));
  // Shrinking.
  EXPECT_FALSE(steady_growth(series(20, [](int t) { return 60 * kGiB - t * 1e7; })));
}

TEST(SteadyGrowth, CriteriaAreTunable) {
  GrowthCriteria c;
  c.min_span = 2 * kNsPerSec;
  c.min_growth_bytes = 1;
  c.min_points = 3;
  Series s{{0, 10}, {kNsPerSec, 20}, {2 * kNsPerSec, 30}};
  auto g = steady_growth(s, c);
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->fit.slope_per_s, 10);
  EXPECT_DOUBLE_EQ(*seconds_to_oom(*g, 100), 10);
}

}  // namespace
}  // namespace cardiac::serving
