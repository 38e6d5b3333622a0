// SPDX-License-Identifier: Apache-2.0
// Tests for the /proc/net/dev parser, link speed and network rates.
#include "host/network.h"

#include <gtest/gtest.h>

#include <string>

#include "core/format.h"

namespace cardiac::host {
namespace {

constexpr const char* kNetDev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo:    3267      29    0    0    0     0          0         0     3267      29    0    0 "
    "   0     0       0          0\n"
    "  eth0:918273645123 712039481    3   14    0     0          0     21733 402917364512 "
    "301283746    1    2    0     0       0          0\n";

TEST(HostNetDev, ParsesAndSkipsLoopback) {
  auto d = parse_net_dev(kNetDev);
  ASSERT_TRUE(d) << d.error().what();
  ASSERT_EQ(d->size(), 1u);
  const NetDevice& e = (*d)[0];
  EXPECT_EQ(e.name, "eth0");
  EXPECT_EQ(e.rx_bytes, 918273645123u);
  EXPECT_EQ(e.rx_packets, 712039481u);
  EXPECT_EQ(e.rx_errors, 3u);
  EXPECT_EQ(e.rx_drops, 14u);
  EXPECT_EQ(e.tx_bytes, 402917364512u);
  EXPECT_EQ(e.tx_packets, 301283746u);
  EXPECT_EQ(e.tx_errors, 1u);
  EXPECT_EQ(e.tx_drops, 2u);
}

TEST(HostNetDev, EmptyTruncatedGarbage) {
  auto e = parse_net_dev("");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->empty());
  auto t = parse_net_dev(std::string(kNetDev) + "  eth1: 1 2 3 4 0\n");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().context, "line 5");
  auto g = parse_net_dev(std::string("\xde\xad\xbe\xef garbage\n"));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().context, "line 1");
  EXPECT_FALSE(parse_net_dev("../x: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"));
}

TEST(HostNetDev, OversizedManyInterfaces) {
  std::string text;
  for (int i = 0; i < 4096; ++i) {
    text += fmt::format("veth{}: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", i);
  }
  auto d = parse_net_dev(text);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->size(), 4096u);
}

TEST(HostNetDev, LinkSpeed) {
  EXPECT_EQ(parse_link_speed_mbps("25000\n"), 25000u);
  EXPECT_FALSE(parse_link_speed_mbps("-1"));
  EXPECT_FALSE(parse_link_speed_mbps("0"));
  EXPECT_FALSE(parse_link_speed_mbps("unknown"));
  EXPECT_FALSE(parse_link_speed_mbps(""));
}

TEST(HostNetDev, CollectReadsSysfs) {
  MemFs fs;
  fs.add_file("/proc/net/dev", kNetDev);
  fs.add_file("/sys/class/net/eth0/speed", "25000\n");
  fs.add_file("/sys/class/net/eth0/operstate", "up\n");
  auto d = collect_net_devices(fs);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].speed_mbps, 25000u);
  EXPECT_EQ((*d)[0].operstate, "up");

  MemFs bare;
  bare.add_file("/proc/net/dev", kNetDev);
  auto b = collect_net_devices(bare);
  ASSERT_TRUE(b);
  EXPECT_FALSE((*b)[0].speed_mbps);
  EXPECT_FALSE((*b)[0].operstate);
}

NetDevice nic(std::uint64_t rx, std::uint64_t tx, std::optional<std::uint64_t> speed) {
  NetDevice n;
  n.name = "eth0";
  n.rx_bytes = rx;
  n.tx_bytes = tx;
  n.speed_mbps = speed;
  return n;
}

TEST(HostNetRates, BytesAndUtilization) {
  auto prev = nic(0, 0, 25000);
  auto cur = nic(3'125'000'000, 31'250'000, 25000);  // 2 s: 50 % and 0.5 % of 25 Gb/s
  cur.rx_drops = 7;
  auto r = compute_net_rates({prev}, {cur}, 2.0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0].rx_bytes_per_s, 1'562'500'000.0);
  ASSERT_TRUE(r[0].rx_util_percent);
  EXPECT_DOUBLE_EQ(*r[0].rx_util_percent, 50.0);
  EXPECT_DOUBLE_EQ(*r[0].tx_util_percent, 0.5);
  EXPECT_EQ(r[0].rx_drops, 7u);
}

TEST(HostNetRates, UnknownSpeedLeavesUtilAbsent) {
  auto r = compute_net_rates({nic(0, 0, std::nullopt)}, {nic(100, 100, std::nullopt)}, 1.0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].rx_util_percent);
  EXPECT_DOUBLE_EQ(r[0].rx_bytes_per_s, 100.0);
}

TEST(HostNetRates, BackwardsCounterLeavesInterfaceOut) {
  EXPECT_TRUE(compute_net_rates({nic(100, 100, 1000)}, {nic(50, 200, 1000)}, 1.0).empty());
}

TEST(HostNetRates, NonPositiveIntervalGivesNothing) {
  EXPECT_TRUE(compute_net_rates({nic(1, 1, 1)}, {nic(2, 2, 1)}, 0.0).empty());
}

}  // namespace
}  // namespace cardiac::host
