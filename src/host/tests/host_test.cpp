// SPDX-License-Identifier: Apache-2.0
// Tests for collect_host and compute_rates over in-memory trees.
#include "host/host.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;

TEST(HostCollect, EmptyTreeGivesAbsentPartsAndNoErrors) {
  MemFs fs;
  HostSnapshot s = collect_host(fs, kT0);
  EXPECT_EQ(s.taken_at, kT0);
  EXPECT_FALSE(s.cpu);
  EXPECT_FALSE(s.memory);
  EXPECT_FALSE(s.load);
  EXPECT_FALSE(s.pressure.cpu);
  EXPECT_TRUE(s.filesystems.empty());
  EXPECT_TRUE(s.disks.empty());
  EXPECT_TRUE(s.nics.empty());
  EXPECT_TRUE(s.dstate_processes.empty());
  EXPECT_FALSE(s.pci);
  EXPECT_TRUE(s.errors.empty());
}

TEST(HostCollect, GarbagePartsAreRecordedOthersKept) {
  MemFs fs;
  fs.add_file("/proc/stat", "cpu  1 2 3 4 5 6 7 8\n");
  fs.add_file("/proc/meminfo", "MemTotal: 100 kB\nMemFree: lots\n");
  fs.add_file("/proc/loadavg", "");
  HostSnapshot s = collect_host(fs, kT0);
  EXPECT_TRUE(s.cpu);
  EXPECT_FALSE(s.memory);
  EXPECT_FALSE(s.load);
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0], "/proc/loadavg line 1: empty");
  EXPECT_EQ(s.errors[1].rfind("/proc/meminfo line 2: ", 0), 0u) << s.errors[1];
}

HostSnapshot snap(TimeNs t, std::uint64_t busy, std::uint64_t idle, std::uint64_t read_sectors,
                  std::uint64_t rx) {
  HostSnapshot s;
  s.taken_at = t;
  CpuStat c;
  c.total = CpuTimes{busy, 0, 0, idle, 0, 0, 0, 0, 8};
  s.cpu = c;
  DiskStat d;
  d.name = "sda";
  d.read_sectors = read_sectors;
  s.disks.push_back(d);
  NetDevice n;
  n.name = "eth0";
  n.rx_bytes = rx;
  n.speed_mbps = 1000;
  s.nics.push_back(n);
  return s;
}

TEST(HostComputeRates, UsesTimestampsForSeconds) {
  auto r =
      compute_rates(snap(kT0, 0, 0, 0, 0), snap(kT0 + 2 * kNsPerSec, 50, 150, 4096, 250'000'000));
  EXPECT_DOUBLE_EQ(r.interval_s, 2.0);
  ASSERT_TRUE(r.cpu.total);
  EXPECT_DOUBLE_EQ(r.cpu.total->busy, 25.0);
  ASSERT_EQ(r.disks.size(), 1u);
  EXPECT_DOUBLE_EQ(r.disks[0].read_bytes_per_s, 4096.0 * 512 / 2);
  ASSERT_EQ(r.nics.size(), 1u);
  EXPECT_DOUBLE_EQ(*r.nics[0].rx_util_percent, 100.0);
}

TEST(HostComputeRates, SameTimestampGivesCpuOnly) {
  auto r = compute_rates(snap(kT0, 0, 0, 0, 0), snap(kT0, 10, 10, 10, 10));
  EXPECT_TRUE(r.cpu.total);
  EXPECT_TRUE(r.disks.empty());
  EXPECT_TRUE(r.nics.empty());
}

TEST(HostComputeRates, MissingCpuOnOneSide) {
  HostSnapshot a = snap(kT0, 0, 0, 0, 0);
  a.cpu.reset();
  auto r = compute_rates(a, snap(kT0 + kNsPerSec, 1, 1, 1, 1));
  EXPECT_FALSE(r.cpu.total);
}

}  // namespace
}  // namespace cardiac::host
