// SPDX-License-Identifier: Apache-2.0
// The pure step from two snapshots to talkers: deltas, new and reused sockets, owners,
// loopback, remotes, link shares and the ranking; and the owner scan over a MemFs /proc.
#include <gtest/gtest.h>

#include "netproc/json.h"
#include "netproc/snapshot.h"
#include "netproc/traffic.h"

namespace cardiac::netproc {
namespace {

using namespace std::string_literals;

Socket tcp(std::uint64_t inode, std::string remote_address, std::uint64_t sent,
           std::uint64_t received, bool loopback = false) {
  Socket s;
  s.inode = inode;
  s.local = "10.0.0.5:" + std::to_string(40000 + inode);
  s.remote_address = std::move(remote_address);
  s.remote = s.remote_address + ":443";
  s.bytes_sent = sent;
  s.bytes_received = received;
  s.loopback = loopback;
  return s;
}

Process proc(std::uint32_t pid, std::string user, std::string cmd) {
  return Process{pid, 1000, std::move(user), "comm" + std::to_string(pid), std::move(cmd)};
}

Snapshot snap(TimeNs at, std::vector<Socket> sockets, std::map<std::uint64_t, std::uint32_t> owners,
              std::vector<Process> procs) {
  Snapshot s;
  s.taken_at = at;
  s.sockets = std::move(sockets);
  s.owners = std::move(owners);
  for (auto& p : procs) s.processes.emplace(p.pid, std::move(p));
  return s;
}

constexpr TimeNs kT0 = 1000 * kNsPerSec;
constexpr TimeNs kT1 = kT0 + 2 * kNsPerSec;  // a 2 s window

TEST(Rate, DeltasPerSocketSumToTheProcessAndRankIt) {
  auto before = snap(kT0, {tcp(1, "1.1.1.1", 1000, 500), tcp(2, "2.2.2.2", 0, 0)},
                     {{1, 10}, {2, 20}}, {proc(10, "alice", "scp big"), proc(20, "bob", "curl")});
  auto after =
      snap(kT1,
           {tcp(1, "1.1.1.1", 1000 + 2'000'000, 500 + 100), tcp(2, "2.2.2.2", 10'000, 30'000),
            tcp(3, "3.3.3.3", 600'000, 0)},
           {{1, 10}, {2, 20}, {3, 10}}, {proc(10, "alice", "scp big"), proc(20, "bob", "curl")});
  auto t = rate(before, after, Link{"eth0", 1000});  // 1 Gb/s = 125 MB/s
  EXPECT_DOUBLE_EQ(t.window_s, 2.0);
  ASSERT_EQ(t.talkers.size(), 2U);
  const auto& top = t.talkers[0];
  EXPECT_EQ(top.process.pid, 10U);
  EXPECT_EQ(top.process.user, "alice");
  EXPECT_EQ(top.process.cmdline, "scp big");
  // Socket 1 moved 2,000,000 up and 100 down; socket 3 is new: all of its 600,000 count.
  EXPECT_EQ(top.sent_bytes, 2'600'000U);
  EXPECT_EQ(top.received_bytes, 100U);
  EXPECT_DOUBLE_EQ(top.sent_bytes_per_s, 1'300'000);
  ASSERT_TRUE(top.sent_link_percent);
  EXPECT_NEAR(*top.sent_link_percent, 100.0 * 1'300'000 * 8 / 1e9, 1e-9);
  EXPECT_EQ(top.sockets, 2U);
  EXPECT_EQ(top.remote_count, 2U);
  EXPECT_EQ(top.top_remotes, (std::vector<std::string>{"1.1.1.1", "3.3.3.3"}));
  EXPECT_EQ(t.talkers[1].process.pid, 20U);
  EXPECT_EQ(t.talkers[1].sent_bytes, 10'000U);
  EXPECT_EQ(t.talkers[1].received_bytes, 30'000U);
  EXPECT_EQ(t.sent_bytes, 2'610'000U);
  EXPECT_EQ(t.received_bytes, 30'100U);
  EXPECT_EQ(t.sockets, 3U);

  // By received bytes, bob leads.
  auto rx = top_by(t, false, 1);
  ASSERT_EQ(rx.size(), 1U);
  EXPECT_EQ(rx[0].process.pid, 20U);
}

TEST(Rate, CountersThatWentBackwardsAreANewSocket) {
  auto before = snap(kT0, {tcp(7, "9.9.9.9", 5'000'000, 5'000'000)}, {{7, 1}}, {proc(1, "u", "")});
  auto after = snap(kT1, {tcp(7, "9.9.9.9", 300, 200)}, {{7, 1}}, {proc(1, "u", "")});
  auto t = rate(before, after, Link{});
  ASSERT_EQ(t.talkers.size(), 1U);
  EXPECT_EQ(t.talkers[0].sent_bytes, 300U);
  EXPECT_EQ(t.talkers[0].received_bytes, 200U);
  EXPECT_FALSE(t.talkers[0].sent_link_percent);  // no link speed: no share
}

TEST(Rate, LoopbackIsLeftOutUnlessAskedFor) {
  auto before = snap(kT0, {}, {}, {});
  auto after = snap(kT1, {tcp(1, "127.0.0.1", 1000, 1000, true), tcp(2, "8.8.8.8", 10, 0)},
                    {{1, 5}, {2, 6}}, {proc(5, "a", "redis"), proc(6, "b", "dig")});
  auto t = rate(before, after, Link{});
  ASSERT_EQ(t.talkers.size(), 1U);
  EXPECT_EQ(t.talkers[0].process.pid, 6U);
  auto all = rate(before, after, Link{}, {.include_loopback = true});
  ASSERT_EQ(all.talkers.size(), 2U);
  EXPECT_EQ(all.talkers[0].process.pid, 5U);
  EXPECT_TRUE(all.loopback_included);
}

TEST(Rate, IdleProcessesAreLeftOutAndUnownedBytesCounted) {
  auto before = snap(kT0, {tcp(1, "1.1.1.1", 10, 10), tcp(2, "2.2.2.2", 0, 0)}, {{1, 3}}, {});
  auto after = snap(kT1, {tcp(1, "1.1.1.1", 10, 10), tcp(2, "2.2.2.2", 70, 30)}, {{1, 3}}, {});
  auto t = rate(before, after, Link{});
  EXPECT_TRUE(t.talkers.empty());
  EXPECT_EQ(t.unowned_bytes, 100U);
  EXPECT_EQ(t.sent_bytes, 70U);
}

TEST(Rate, UdpDropsMakeATalkerWithoutBytes) {
  Socket u;
  u.protocol = Protocol::kUdp;
  u.inode = 50;
  u.local = "0.0.0.0:514";
  u.drops = 10;
  auto before = snap(kT0, {u}, {{50, 9}}, {proc(9, "syslog", "rsyslogd")});
  u.drops = 25;
  auto after = snap(kT1, {u}, {{50, 9}}, {proc(9, "syslog", "rsyslogd")});
  auto t = rate(before, after, Link{});
  ASSERT_EQ(t.talkers.size(), 1U);
  EXPECT_EQ(t.talkers[0].udp_drops, 15U);
  EXPECT_EQ(t.talkers[0].sent_bytes, 0U);
}

TEST(Rate, OwnersComeFromTheLaterSnapshotFirst) {
  auto before = snap(kT0, {tcp(1, "1.1.1.1", 0, 0)}, {{1, 100}}, {proc(100, "gone", "old")});
  auto after = snap(kT1, {tcp(1, "1.1.1.1", 50, 0)}, {}, {});
  auto t = rate(before, after, Link{});
  ASSERT_EQ(t.talkers.size(), 1U);
  EXPECT_EQ(t.talkers[0].process.pid, 100U);
  EXPECT_EQ(t.talkers[0].process.user, "gone");
}

TEST(Rate, TopRemotesAreCappedAndRemoteCountIsNot) {
  std::vector<Socket> socks;
  std::map<std::uint64_t, std::uint32_t> owners;
  for (std::uint64_t i = 1; i <= 30; ++i) {
    socks.push_back(tcp(i, "198.51.100." + std::to_string(i), i * 100, 0));
    owners.emplace(i, 42);
  }
  auto t = rate(snap(kT0, {}, {}, {}), snap(kT1, socks, owners, {proc(42, "x", "flood")}),
                Link{"eth0", 10'000});
  ASSERT_EQ(t.talkers.size(), 1U);
  EXPECT_EQ(t.talkers[0].remote_count, 30U);
  ASSERT_EQ(t.talkers[0].top_remotes.size(), 5U);
  EXPECT_EQ(t.talkers[0].top_remotes[0], "198.51.100.30");
  auto j = to_json(t, 10);
  EXPECT_EQ(j["talkers"][0]["remote_count"], 30);
  EXPECT_EQ(j["talkers"][0]["cmdline"], "flood");
  EXPECT_EQ(j["link"]["speed_mbps"], 10'000);
  EXPECT_EQ(to_json(t, 0)["talkers"].size(), 0U);
}

TEST(Owners, FdLinksUnderAMemFsNameTheProcessAndUser) {
  MemFs fs;
  fs.add_file("/etc/passwd", "root:x:0:0::/:/bin/sh\nalice:x:1000:1000::/:/bin/sh\n");
  fs.add_file("/proc/300/comm", "rsync\n");
  fs.add_file("/proc/300/status", "Name:\trsync\nUid:\t1000\t1000\t1000\t1000\n");
  fs.add_file("/proc/300/cmdline", "rsync\0-a\0/data\0host:/backup\0"s);
  fs.add_link("/proc/300/fd/0", "/dev/null");
  fs.add_link("/proc/300/fd/3", "socket:[4242]");
  fs.add_link("/proc/300/fd/4", "pipe:[1]");
  // A child that inherited the socket: the parent keeps it.
  fs.add_file("/proc/301/comm", "rsync\n");
  fs.add_link("/proc/301/fd/3", "socket:[4242]");
  fs.add_link("/proc/302/fd/3", "socket:[999]");  // a socket the snapshot does not hold
  Snapshot s;
  s.sockets.push_back(tcp(4242, "192.0.2.1", 1, 1));
  read_owners(fs, s);
  ASSERT_EQ(s.owners.size(), 1U);
  EXPECT_EQ(s.owners.at(4242), 300U);
  ASSERT_EQ(s.processes.size(), 1U);
  const auto& p = s.processes.at(300);
  EXPECT_EQ(p.comm, "rsync");
  EXPECT_EQ(p.uid, 1000U);
  EXPECT_EQ(p.user, "alice");
  EXPECT_EQ(p.cmdline, "rsync -a /data host:/backup");
}

TEST(Owners, UdpTablesAreReadThroughTheFileSystem) {
  MemFs fs;
  fs.add_file("/proc/net/udp",
              "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
              "timeout inode ref pointer drops\n"
              "  1: 00000000:0202 00000000:0000 07 00000000:00000000 00:00000000 00000000 0 0 "
              "77 2 0000000000000000 3\n");
  fs.add_file("/proc/net/udp6", "garbage header\nnot a socket line\n");
  Snapshot s;
  read_udp_sockets(fs, s);
  ASSERT_EQ(s.sockets.size(), 1U);
  EXPECT_EQ(s.sockets[0].inode, 77U);
  EXPECT_EQ(s.sockets[0].drops, 3U);
  ASSERT_EQ(s.notes.size(), 1U);
  EXPECT_NE(s.notes[0].find("/proc/net/udp6 line 2"), std::string::npos) << s.notes[0];
}

TEST(PickLink, DefaultRouteThenBusiest) {
  MemFs fs;
  std::vector<host::NetDevice> nics(2);
  nics[0].name = "eth0";
  nics[0].speed_mbps = 25'000;
  nics[1].name = "eth1";
  nics[1].speed_mbps = 100'000;
  std::vector<host::NetRates> rates(2);
  rates[0].name = "eth0";
  rates[0].tx_bytes_per_s = 10;
  rates[1].name = "eth1";
  rates[1].tx_bytes_per_s = 1000;
  EXPECT_EQ(pick_link(fs, nics, rates).name, "eth1");
  fs.add_file("/proc/net/route",
              "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
              "eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
  auto l = pick_link(fs, nics, rates);
  EXPECT_EQ(l.name, "eth0");
  EXPECT_EQ(l.speed_mbps, 25'000U);
  EXPECT_EQ(pick_link(fs, nics, rates, "eth1").name, "eth1");
}

}  // namespace
}  // namespace cardiac::netproc
