// SPDX-License-Identifier: Apache-2.0
#include "dashboard/chart.h"

#include <gtest/gtest.h>

namespace cardiac::dashboard {
namespace {

using nlohmann::json;

constexpr TimeNs kSec = kNsPerSec;

TEST(ChartRange, NamesAndSteps) {
  auto r = parse_chart_range("15m");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->span, 900 * kSec);
  EXPECT_EQ(r->step, 5 * kSec);
  EXPECT_EQ(parse_chart_range("1h")->step, 15 * kSec);
  EXPECT_EQ(parse_chart_range("24h")->step, 300 * kSec);
  EXPECT_EQ(parse_chart_range("7d")->span, 7 * 86400 * kSec);
  EXPECT_EQ(parse_chart_range("7d")->step, 3600 * kSec);
  auto bad = parse_chart_range("2h");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("15m, 1h, 24h or 7d"), std::string::npos);
}

TEST(ChartRange, GridStartsOnAStep) {
  ChartRange r{"x", 60 * kSec, 15 * kSec};
  // until 1000 s: since 940 s, rounded down to 930 s (a multiple of 15).
  EXPECT_EQ(grid_start(1000 * kSec, r), 930 * kSec);
  EXPECT_EQ(grid_start(1005 * kSec, r), 945 * kSec);
}

TEST(ChartMetrics, GpuAndHost) {
  const auto& gpu = chart_metrics(false);
  EXPECT_NE(std::find(gpu.begin(), gpu.end(), "gpu_temperature"), gpu.end());
  EXPECT_NE(std::find(gpu.begin(), gpu.end(), "gpu_clock_event_reasons"), gpu.end());
  const auto& host = chart_metrics(true);
  EXPECT_NE(std::find(host.begin(), host.end(), "host_cpu_busy_percent"), host.end());
  EXPECT_EQ(std::find(host.begin(), host.end(), "gpu_temperature"), host.end());
}

const json* panel(const json& c, const std::string& id) {
  for (const auto& p : c["panels"]) {
    if (p["id"] == id) return &p;
  }
  return nullptr;
}

TEST(Chart, PutsPointsOnTheGridWithNullsForGaps) {
  ChartInput in;
  in.gpu = 3;
  in.range = ChartRange{"x", 60 * kSec, 15 * kSec};
  in.until = 1000 * kSec;  // grid: 930, 945, 960, 975, 990
  in.series["gpu_temperature"].points = {{945 * kSec, 50, 49, 51}, {990 * kSec, 60, 60, 60}};
  // Off the grid (before it, after until, between steps): dropped.
  in.series["gpu_temperature"].points.push_back({1005 * kSec, 1, 1, 1});
  in.series["gpu_power_usage_mw"].points = {{930 * kSec, 250000, 0, 0}};
  in.now = {{"temperature_slowdown", 87}, {"memory_total", 85899345920.0}};
  json c = chart(in);
  EXPECT_EQ(c["schema"], "cardiac.dashboard.chart/v1");
  EXPECT_EQ(c["target"], "gpu 3");
  EXPECT_EQ(c["times"], json({930, 945, 960, 975, 990}));
  const json* t = panel(c, "temperature");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->at("series")[0]["values"], json({nullptr, 50.0, nullptr, nullptr, 60.0}));
  EXPECT_EQ(t->at("limits")[0]["label"], "slowdown");
  EXPECT_EQ(t->at("limits")[0]["value"], 87.0);
  // 250 000 mW is 250 W; 80 GiB total memory.
  EXPECT_EQ(panel(c, "power")->at("series")[0]["values"][0], 250.0);
  EXPECT_EQ(panel(c, "memory")->at("limits")[0]["value"], 80.0);
  EXPECT_EQ(c["points"], 3);
  // Metrics with no entry at all were not read: the chart says so instead of drawing nothing.
  EXPECT_FALSE(c["errors"].empty());
}

TEST(Chart, ReportsASeriesThatCouldNotBeRead) {
  ChartInput in;
  in.range = ChartRange{"x", 30 * kSec, 10 * kSec};
  in.until = 100 * kSec;
  for (const auto& m : chart_metrics(true)) in.series[m];
  in.series["host_cpu_busy_percent"].error = "database is locked";
  in.now = {{"memory", {{"total_bytes", 2147483648.0}}}, {"cpu", {{"cores", 2}}}};
  json c = chart(in);
  EXPECT_EQ(c["target"], "host");
  ASSERT_EQ(c["errors"].size(), 1U);
  EXPECT_EQ(c["errors"][0]["metric"], "host_cpu_busy_percent");
  EXPECT_EQ(c["errors"][0]["error"], "database is locked");
  EXPECT_EQ(panel(c, "memory")->at("limits")[0]["value"], 2.0);
  EXPECT_EQ(panel(c, "load")->at("limits")[0]["value"], 2.0);
  EXPECT_EQ(c["throttle"], json::array());
}

TEST(Chart, MarksThrottlePeriods) {
  ChartInput in;
  in.gpu = 0;
  in.range = ChartRange{"x", 60 * kSec, 10 * kSec};
  in.until = 60 * kSec;  // grid 0..50
  auto& pts = in.series["gpu_clock_event_reasons"].points;
  // 0: idle (bit 0x1, not throttling); 10, 20: HW thermal (0x40); 30: none; 40: SW power cap
  // (0x4); 50 missing.
  pts = {{0, 1, 1, 1},
         {10 * kSec, 64, 64, 64},
         {20 * kSec, 0, 0, 64},
         {30 * kSec, 0, 0, 0},
         {40 * kSec, 4, 4, 4}};
  json c = chart(in);
  EXPECT_EQ(c["throttle"], json({{{"from", 10}, {"to", 30}}, {{"from", 40}, {"to", 50}}}));
}

TEST(Chart, ThrottleRunBrokenByAGapIsTwoPeriods) {
  ChartInput in;
  in.gpu = 0;
  in.range = ChartRange{"x", 60 * kSec, 10 * kSec};
  in.until = 60 * kSec;
  in.series["gpu_clock_event_reasons"].points = {{0, 8, 8, 8}, {20 * kSec, 8, 8, 8}};
  json c = chart(in);
  EXPECT_EQ(c["throttle"], json({{{"from", 0}, {"to", 10}}, {{"from", 20}, {"to", 30}}}));
}

}  // namespace
}  // namespace cardiac::dashboard
