// SPDX-License-Identifier: Apache-2.0
// Tests for the /proc/meminfo parser.
#include "host/memory.h"

#include <gtest/gtest.h>

#include <string>

#include "core/format.h"

namespace cardiac::host {
namespace {

TEST(HostMemInfo, ParsesAndConvertsKilobytes) {
  auto m = parse_meminfo(
      "MemTotal:       24683584 kB\n"
      "MemFree:        24543048 kB\n"
      "MemAvailable:   24450912 kB\n"
      "Buffers:             692 kB\n"
      "Cached:            20152 kB\n"
      "SwapCached:            0 kB\n"
      "Active(anon):       1488 kB\n"
      "SwapTotal:       2097148 kB\n"
      "SwapFree:        2097148 kB\n"
      "HugePages_Total:       0\n"
      "Hugepagesize:       2048 kB\n");
  ASSERT_TRUE(m) << m.error().what();
  EXPECT_EQ(m->total, 24683584ull * 1024);
  EXPECT_EQ(m->available, 24450912ull * 1024);
  EXPECT_EQ(m->buffers, 692ull * 1024);
  EXPECT_EQ(m->cached, 20152ull * 1024);
  EXPECT_EQ(m->swap_total, 2097148ull * 1024);
  EXPECT_EQ(m->swap_free, 2097148ull * 1024);
}

TEST(HostMemInfo, OldKernelLeavesAvailableAbsent) {
  auto m = parse_meminfo("MemTotal: 8174352 kB\nMemFree: 2134704 kB\nCached: 4521840 kB\n");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->available);
  EXPECT_FALSE(m->swap_total);
  EXPECT_EQ(m->free, 2134704ull * 1024);
}

TEST(HostMemInfo, Empty) {
  auto m = parse_meminfo("");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "empty");
}

TEST(HostMemInfo, TruncatedLastLineNamesTheLine) {
  auto m = parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\nMemAvail");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().context, "line 3");
}

TEST(HostMemInfo, GarbageValueNamesTheLine) {
  auto m = parse_meminfo(std::string("MemTotal: 100 kB\nMemFree: 24\0\0\x9c kB\n", 35));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().context, "line 2");
  EXPECT_NE(m.error().what().find("MemFree"), std::string::npos);
}

TEST(HostMemInfo, UnknownUnitIsAnError) {
  EXPECT_FALSE(parse_meminfo("MemTotal: 100 MB\n"));
}

TEST(HostMemInfo, MissingTotal) {
  auto m = parse_meminfo("MemFree: 50 kB\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "no MemTotal line");
}

TEST(HostMemInfo, OverflowInBytesIsAnError) {
  EXPECT_FALSE(parse_meminfo("MemTotal: 18446744073709551615 kB\n"));
}

TEST(HostMemInfo, OversizedManyUnknownKeys) {
  std::string text = "MemTotal: 1 kB\n";
  for (int i = 0; i < 20000; ++i) text += fmt::format("Key{}: {} kB\n", i, i);
  auto m = parse_meminfo(text);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total, 1024u);
}

}  // namespace
}  // namespace cardiac::host
