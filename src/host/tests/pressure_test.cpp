// SPDX-License-Identifier: Apache-2.0
// Tests for the /proc/pressure parsers.
#include "host/pressure.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

TEST(HostPressure, ParsesSomeAndFull) {
  auto p = parse_pressure(
      "some avg10=0.13 avg60=0.11 avg300=0.17 total=3017134\n"
      "full avg10=1.50 avg60=2.00 avg300=0.16 total=2317684\n");
  ASSERT_TRUE(p) << p.error().what();
  ASSERT_TRUE(p->some);
  EXPECT_DOUBLE_EQ(p->some->avg10, 0.13);
  EXPECT_DOUBLE_EQ(p->some->avg300, 0.17);
  EXPECT_EQ(p->some->total_us, 3017134u);
  ASSERT_TRUE(p->full);
  EXPECT_DOUBLE_EQ(p->full->avg60, 2.0);
}

TEST(HostPressure, CpuWithoutFullOnOlderKernels) {
  auto p = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->some);
  EXPECT_FALSE(p->full);
}

TEST(HostPressure, EmptyTruncatedGarbage) {
  EXPECT_FALSE(parse_pressure(""));
  auto t = parse_pressure("some avg10=0.13 avg60=0.11 avg300=0.17 total=3017134\nfull avg10=0.0");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().context, "line 2");
  EXPECT_FALSE(parse_pressure("some avg10=x avg60=0.11 avg300=0.17 total=1\n"));
  EXPECT_FALSE(parse_pressure("some avg60=0.11 avg10=0.13 avg300=0.17 total=1\n"));
  EXPECT_FALSE(parse_pressure(std::string("\xff\xfe\x00garbage", 10)));
}

TEST(HostPressure, OversizedTotal) {
  EXPECT_FALSE(parse_pressure("some avg10=0.1 avg60=0.1 avg300=0.1 total=184467440737095516150\n"));
}

TEST(HostPressure, CollectMissingFilesAreAbsent) {
  MemFs fs;
  fs.add_file("/proc/pressure/io", "some avg10=5.00 avg60=4.00 avg300=3.00 total=10\n");
  auto p = collect_pressure(fs);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->cpu);
  EXPECT_FALSE(p->memory);
  ASSERT_TRUE(p->io);
  EXPECT_DOUBLE_EQ(p->io->some->avg10, 5.0);
}

TEST(HostPressure, CollectGarbageNamesTheFile) {
  MemFs fs;
  fs.add_file("/proc/pressure/memory", "bogus\n");
  auto p = collect_pressure(fs);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().context, "/proc/pressure/memory line 1");
}

}  // namespace
}  // namespace cardiac::host
