// SPDX-License-Identifier: Apache-2.0
// Tests for the /proc/diskstats parser, the whole-disk rule and disk rates.
#include "host/disks.h"

#include <gtest/gtest.h>

#include <string>

#include "core/format.h"

namespace cardiac::host {
namespace {

constexpr const char* kDiskstats =
    "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    " 254       0 vda 27577 5429 1934114 6327 3209 5170 389760 1169 0 3452 7820 3868 40 100368 309 "
    "371 14\n"
    " 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    " 259       0 nvme0n1 100 0 2000 50 10 0 80 5 2 60 55\n"
    " 259       1 nvme0n1p1 100 0 2000 50 10 0 80 5 2 60 55\n"
    "   8       1 sda1 36 72 69 144\n";

TEST(HostDiskstats, ParsesAllShapes) {
  auto d = parse_diskstats(kDiskstats);
  ASSERT_TRUE(d) << d.error().what();
  ASSERT_EQ(d->size(), 5u);  // the 4-counter partition row is skipped
  const DiskStat& vda = (*d)[1];
  EXPECT_EQ(vda.name, "vda");
  EXPECT_EQ(vda.major, 254u);
  EXPECT_EQ(vda.reads, 27577u);
  EXPECT_EQ(vda.read_sectors, 1934114u);
  EXPECT_EQ(vda.read_ms, 6327u);
  EXPECT_EQ(vda.writes, 3209u);
  EXPECT_EQ(vda.write_sectors, 389760u);
  EXPECT_EQ(vda.write_ms, 1169u);
  EXPECT_EQ(vda.in_flight, 0u);
  EXPECT_EQ(vda.io_ms, 3452u);
  EXPECT_EQ(vda.weighted_ms, 7820u);
  EXPECT_EQ((*d)[3].in_flight, 2u);
}

TEST(HostDiskstats, EmptyTruncatedGarbage) {
  auto e = parse_diskstats("");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->empty());
  auto t = parse_diskstats(" 254 0 vda 1 2 3 4 5 6 7 8 0 1 2\n 254 16 vdb 1 2 3");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().context, "line 2");
  auto g = parse_diskstats(" 254 0 vda 1 2 3 4 5 6 7 x 0 1 2\n");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().context, "line 1");
  EXPECT_FALSE(parse_diskstats(std::string("\x00\x01\x02\xff", 4)));
}

TEST(HostDiskstats, OversizedManyDevices) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += fmt::format(" 8 {} sd{} 1 0 2 3 4 0 5 6 0 7 8\n", i, i);
  auto d = parse_diskstats(text);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->size(), 5000u);
}

TEST(HostDiskstats, WholeDiskRule) {
  for (const char* n :
       {"sda", "sdaa", "vda", "xvdb", "nvme0n1", "nvme12n3", "mmcblk0", "dm-0", "md127"}) {
    EXPECT_TRUE(is_whole_disk(n)) << n;
  }
  for (const char* n : {"sda1", "vda2", "xvdb3", "nvme0n1p1", "mmcblk0p2", "md0p1", "loop0", "ram3",
                        "zram0", "fd0", "sr0", ""}) {
    EXPECT_FALSE(is_whole_disk(n)) << n;
  }
}

TEST(HostDiskstats, CollectUsesSysBlockWhenPresent) {
  MemFs fs;
  fs.add_file("/proc/diskstats", kDiskstats);
  auto by_name = collect_diskstats(fs);
  ASSERT_TRUE(by_name);
  ASSERT_EQ(by_name->size(), 2u);
  EXPECT_EQ((*by_name)[0].name, "vda");
  EXPECT_EQ((*by_name)[1].name, "nvme0n1");

  fs.add_file("/sys/block/nvme0n1/stat", "");
  fs.add_file("/sys/block/loop0/stat", "");
  auto by_sys = collect_diskstats(fs);
  ASSERT_TRUE(by_sys);
  ASSERT_EQ(by_sys->size(), 1u);
  EXPECT_EQ((*by_sys)[0].name, "nvme0n1");
}

DiskStat disk(std::uint64_t reads, std::uint64_t sectors, std::uint64_t read_ms,
              std::uint64_t io_ms) {
  DiskStat d;
  d.name = "nvme0n1";
  d.reads = reads;
  d.read_sectors = sectors;
  d.read_ms = read_ms;
  d.io_ms = io_ms;
  return d;
}

TEST(HostDiskRates, BytesIopsAwaitUtil) {
  auto prev = disk(1000, 10000, 500, 1000);
  auto cur = disk(3400, 10000 + 2400 * 256, 500 + 28800, 1985);
  cur.writes = 40;
  cur.write_ms = 120;
  cur.in_flight = 32;
  auto r = compute_disk_rates({prev}, {cur}, 1.0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0].read_bytes_per_s, 2400.0 * 256 * 512);
  EXPECT_DOUBLE_EQ(r[0].read_iops, 2400.0);
  EXPECT_DOUBLE_EQ(r[0].write_iops, 40.0);
  ASSERT_TRUE(r[0].await_ms);
  EXPECT_NEAR(*r[0].await_ms, 28920.0 / 2440.0, 1e-9);
  EXPECT_DOUBLE_EQ(r[0].util_percent, 98.5);
  EXPECT_EQ(r[0].in_flight, 32u);
}

TEST(HostDiskRates, IdleDiskHasNoAwait) {
  auto d = disk(10, 10, 10, 10);
  auto r = compute_disk_rates({d}, {d}, 2.0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].await_ms);
  EXPECT_DOUBLE_EQ(r[0].util_percent, 0.0);
}

TEST(HostDiskRates, UtilCappedAt100) {
  auto r = compute_disk_rates({disk(0, 0, 0, 0)}, {disk(1, 1, 1, 1500)}, 1.0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0].util_percent, 100.0);
}

TEST(HostDiskRates, BackwardsCounterLeavesDeviceOut) {
  auto r = compute_disk_rates({disk(100, 100, 100, 100)}, {disk(5, 5, 5, 5)}, 1.0);
  EXPECT_TRUE(r.empty());
}

TEST(HostDiskRates, NonPositiveIntervalGivesNothing) {
  auto d = disk(1, 1, 1, 1);
  EXPECT_TRUE(compute_disk_rates({d}, {d}, 0.0).empty());
  EXPECT_TRUE(compute_disk_rates({d}, {d}, -1.0).empty());
}

}  // namespace
}  // namespace cardiac::host
