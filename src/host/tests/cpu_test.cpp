// SPDX-License-Identifier: Apache-2.0
// Tests for the /proc/stat and /proc/loadavg parsers and CPU usage.
#include "host/cpu.h"

#include <gtest/gtest.h>

#include <string>

#include "core/format.h"

namespace cardiac::host {
namespace {

constexpr const char* kStat =
    "cpu  1223 0 1231 93665 248 0 25 12 0 0\n"
    "cpu0 293 0 491 47399 4 0 4 4 0 0\n"
    "cpu1 930 0 739 46266 244 0 20 7 0 0\n"
    "intr 102801 0 0 0 0 0 0\n"
    "ctxt 224725\n"
    "btime 1796229247\n"
    "processes 6237\n"
    "procs_running 2\n"
    "procs_blocked 1\n"
    "softirq 109257 0 17095 3 703 33208 0 2 32478 0 25768\n";

TEST(HostProcStat, ParsesTotalCoresAndProcs) {
  auto s = parse_proc_stat(kStat);
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->total.user, 1223u);
  EXPECT_EQ(s->total.system, 1231u);
  EXPECT_EQ(s->total.idle, 93665u);
  EXPECT_EQ(s->total.iowait, 248u);
  EXPECT_EQ(s->total.softirq, 25u);
  EXPECT_EQ(s->total.steal, 12u);
  EXPECT_EQ(s->total.columns, 8u);
  ASSERT_EQ(s->core_count(), 2u);
  EXPECT_EQ(s->cores[1].cpu, 1u);
  EXPECT_EQ(s->cores[1].times.iowait, 244u);
  EXPECT_EQ(s->procs_running, 2u);
  EXPECT_EQ(s->procs_blocked, 1u);
}

TEST(HostProcStat, OldKernelColumnsAreUnknownNotZero) {
  auto s = parse_proc_stat(
      "cpu  2255 34 2290 22625563 6290 127 456\ncpu0 2255 34 2290 22625563 6290 127 456\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->total.columns, 7u);
  EXPECT_TRUE(s->total.has_iowait());
  EXPECT_FALSE(s->total.has_steal());
  EXPECT_FALSE(s->procs_blocked);
}

TEST(HostProcStat, EmptyIsAnError) {
  auto s = parse_proc_stat("");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kParse);
}

TEST(HostProcStat, TruncatedCoreLineNamesTheLine) {
  auto s = parse_proc_stat("cpu  1 2 3 4 5 6 7 8\ncpu0 1 2\n");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().context, "line 2");
}

TEST(HostProcStat, GarbageNamesTheLine) {
  auto s =
      parse_proc_stat(std::string("cpu  1 2 3 4\n\x7f"
                                  "ELF\x01\x00\xff",
                                  20));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().context, "line 2");
  EXPECT_NE(s.error().message.find("\\x7f"), std::string::npos);
}

TEST(HostProcStat, NonNumericCounter) {
  auto s = parse_proc_stat("cpu  1 2 x 4\n");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().context, "line 1");
}

TEST(HostProcStat, MissingAggregateLine) {
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4\n"));
}

TEST(HostProcStat, OversizedThousandCores) {
  std::string text = "cpu  1024 0 1024 102400 0 0 0 0 0 0\n";
  for (int i = 0; i < 1024; ++i) text += fmt::format("cpu{} 1 0 1 100 0 0 0 0 0 0\n", i);
  text += "intr 1\n";
  auto s = parse_proc_stat(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->core_count(), 1024u);
  EXPECT_EQ(s->cores.back().cpu, 1023u);
}

TEST(HostProcStat, CounterOverflowingU64IsAnError) {
  EXPECT_FALSE(parse_proc_stat("cpu  1 2 3 99999999999999999999999\n"));
}

TEST(HostLoadAvg, Parses) {
  auto l = parse_loadavg("0.01 0.05 0.02 1/83 3393\n");
  ASSERT_TRUE(l);
  EXPECT_DOUBLE_EQ(l->load1, 0.01);
  EXPECT_DOUBLE_EQ(l->load15, 0.02);
  EXPECT_EQ(l->running, 1u);
  EXPECT_EQ(l->total, 83u);
}

TEST(HostLoadAvg, EmptyTruncatedGarbage) {
  EXPECT_FALSE(parse_loadavg(""));
  EXPECT_FALSE(parse_loadavg("0.01 0.05"));
  EXPECT_FALSE(parse_loadavg("0.01 0.05 0.02 1-83 3393"));
  EXPECT_FALSE(parse_loadavg("abc def ghi 1/2 3"));
  auto e = parse_loadavg("\n");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().context, "line 1");
}

CpuStat stat_of(CpuTimes total, std::vector<CoreTimes> cores = {}) {
  CpuStat s;
  s.total = total;
  s.cores = std::move(cores);
  return s;
}

TEST(HostCpuUsage, PercentagesFromDeltas) {
  // 200 ticks: user 45, system 14+4, idle 47, iowait 90.
  CpuTimes a{100, 0, 100, 1000, 10, 0, 10, 0, 8};
  CpuTimes b{145, 0, 114, 1047, 100, 0, 14, 0, 8};
  auto u = compute_cpu_usage(stat_of(a, {{0, a}}), stat_of(b, {{0, b}}));
  ASSERT_TRUE(u.total);
  EXPECT_DOUBLE_EQ(u.total->user, 22.5);
  EXPECT_DOUBLE_EQ(u.total->system, 9.0);
  EXPECT_DOUBLE_EQ(u.total->idle, 23.5);
  ASSERT_TRUE(u.total->iowait);
  EXPECT_DOUBLE_EQ(*u.total->iowait, 45.0);
  ASSERT_TRUE(u.total->steal);
  EXPECT_DOUBLE_EQ(*u.total->steal, 0.0);
  EXPECT_DOUBLE_EQ(u.total->busy, 31.5);
  ASSERT_EQ(u.cores.size(), 1u);
  EXPECT_DOUBLE_EQ(*u.cores[0].usage.iowait, 45.0);
}

TEST(HostCpuUsage, EqualSamplesGiveAbsent) {
  CpuTimes a{1, 2, 3, 4, 5, 6, 7, 8, 8};
  auto u = compute_cpu_usage(stat_of(a, {{0, a}}), stat_of(a, {{0, a}}));
  EXPECT_FALSE(u.total);
  EXPECT_TRUE(u.cores.empty());
}

TEST(HostCpuUsage, BackwardsCounterNeverNegative) {
  CpuTimes a{100, 0, 100, 1000, 500, 0, 0, 0, 8};
  CpuTimes b{150, 0, 150, 1100, 490, 0, 0, 0, 8};  // iowait stepped back
  auto u = compute_cpu_usage(stat_of(a), stat_of(b));
  ASSERT_TRUE(u.total);
  EXPECT_DOUBLE_EQ(*u.total->iowait, 0.0);
  EXPECT_DOUBLE_EQ(u.total->user, 25.0);
  EXPECT_GE(u.total->busy, 0.0);
}

TEST(HostCpuUsage, CounterResetGivesAbsent) {
  CpuTimes a{100, 0, 100, 1000, 5, 0, 0, 0, 8};
  CpuTimes b{1, 0, 1, 10, 0, 0, 0, 0, 8};
  EXPECT_FALSE(compute_cpu_usage(stat_of(a), stat_of(b)).total);
}

TEST(HostCpuUsage, SevenColumnsHaveNoSteal) {
  CpuTimes a{0, 0, 0, 0, 0, 0, 0, 0, 7};
  CpuTimes b{10, 0, 10, 80, 0, 0, 0, 0, 7};
  auto u = compute_cpu_usage(stat_of(a), stat_of(b));
  ASSERT_TRUE(u.total);
  EXPECT_TRUE(u.total->iowait);
  EXPECT_FALSE(u.total->steal);
}

TEST(HostCpuUsage, CoresMatchedByIndexAcrossHotplug) {
  CpuTimes z{0, 0, 0, 0, 0, 0, 0, 0, 8};
  CpuTimes t{50, 0, 0, 50, 0, 0, 0, 0, 8};
  auto prev = stat_of(z, {{0, z}, {1, z}, {2, z}});
  auto cur = stat_of(t, {{0, t}, {2, t}, {3, t}});
  auto u = compute_cpu_usage(prev, cur);
  ASSERT_EQ(u.cores.size(), 2u);
  EXPECT_EQ(u.cores[0].cpu, 0u);
  EXPECT_EQ(u.cores[1].cpu, 2u);
  EXPECT_DOUBLE_EQ(u.cores[1].usage.user, 50.0);
}

}  // namespace
}  // namespace cardiac::host
