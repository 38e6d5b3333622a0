// SPDX-License-Identifier: Apache-2.0
// The pure readers: /proc/net/udp{,6} lines, fd links, passwd, route, and sock_diag answers
// built byte by byte as the kernel lays them out.
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>

#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "netproc/parse.h"

namespace cardiac::netproc {
namespace {

constexpr const char* kUdpHeader =
    "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode ref pointer drops\n";

TEST(ProcNetUdp, ParsesBoundAndConnectedSocketsWithDrops) {
  std::string text = kUdpHeader;
  // 0.0.0.0:68 unbound remote, uid 0, inode 15290, 0 drops.
  text +=
      "  123: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0     "
      "   0 15290 2 0000000000000000 0\n";
  // 10.0.0.5:5353 connected to 10.0.0.9:53 (words as a little-endian CPU prints them),
  // uid 1000, 17 drops.
  text +=
      "  124: 0500000A:14E9 0900000A:0035 01 00000000:00000000 00:00000000 00000000  1000     "
      "   0 777 2 0000000000000000 17\n";
  auto parsed = parse_proc_net_udp(text, false, "/proc/net/udp");
  ASSERT_TRUE(parsed) << parsed.error().what();
  ASSERT_EQ(parsed->size(), 2U);
  const auto& a = (*parsed)[0];
  EXPECT_EQ(a.protocol, Protocol::kUdp);
  EXPECT_EQ(a.inode, 15290U);
  EXPECT_EQ(a.local, "0.0.0.0:68");
  EXPECT_EQ(a.remote, "");
  EXPECT_FALSE(a.loopback);
  EXPECT_FALSE(a.bytes_sent);
  const auto& b = (*parsed)[1];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  EXPECT_EQ(b.local, "10.0.0.5:5353");
  EXPECT_EQ(b.remote, "10.0.0.9:53");
  EXPECT_EQ(b.remote_address, "10.0.0.9");
#endif
  EXPECT_EQ(b.uid, 1000U);
  EXPECT_EQ(b.inode, 777U);
  EXPECT_EQ(b.drops, 17U);
}

TEST(ProcNetUdp, Ipv6LoopbackAndMappedAddresses) {
  std::string text = kUdpHeader;
  // [::1]:323 unconnected: loopback by its local address.
  text +=
      "  5: 00000000000000000000000001000000:0143 00000000000000000000000000000000:0000 07 "
      "00000000:00000000 00:00000000 00000000     0        0 42 2 0000000000000000 0\n";
  // ::ffff:192.168.1.2 connected: written as IPv4.
  text +=
      "  6: 00000000000000000000000001000000:0143 0000000000000000FFFF00000201A8C0:01BB 01 "
      "00000000:00000000 00:00000000 00000000     0        0 43 2 0000000000000000 0\n";
  auto parsed = parse_proc_net_udp(text, true, "/proc/net/udp6");
  ASSERT_TRUE(parsed) << parsed.error().what();
  ASSERT_EQ(parsed->size(), 2U);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  EXPECT_EQ((*parsed)[0].local, "[::1]:323");
  EXPECT_TRUE((*parsed)[0].loopback);
  EXPECT_EQ((*parsed)[1].remote, "192.168.1.2:443");
  EXPECT_EQ((*parsed)[1].remote_address, "192.168.1.2");
  EXPECT_FALSE((*parsed)[1].loopback);
#endif
}

TEST(ProcNetUdp, BadLinesNameTheFileLineAndField) {
  std::string text = kUdpHeader;
  text +=
      "  1: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000 0 0 x 2 0 0\n";
  auto bad_inode = parse_proc_net_udp(text, false, "/proc/net/udp");
  ASSERT_FALSE(bad_inode);
  EXPECT_NE(bad_inode.error().what().find("/proc/net/udp line 2: inode"), std::string::npos)
      << bad_inode.error().what();

  auto short_line =
      parse_proc_net_udp(std::string(kUdpHeader) + "  1: 00000000:0044\n", false, "/proc/net/udp");
  ASSERT_FALSE(short_line);
  EXPECT_NE(short_line.error().what().find("line 2"), std::string::npos);

  // An IPv6 address in the IPv4 table is an error, not a misread.
  std::string v6_in_v4 = std::string(kUdpHeader) +
                         "  1: 00000000000000000000000001000000:0143 "
                         "00000000000000000000000000000000:0000 07 0:0 0:0 0 0 0 42 2 0 0\n";
  auto wrong = parse_proc_net_udp(v6_in_v4, false, "/proc/net/udp");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().what().find("local_address"), std::string::npos);
  EXPECT_TRUE(parse_proc_net_udp(kUdpHeader, false, "x"));
}

TEST(FdLinks, OnlySocketLinksGiveAnInode) {
  EXPECT_EQ(socket_inode("socket:[12345]"), 12345U);
  EXPECT_FALSE(socket_inode("pipe:[12345]"));
  EXPECT_FALSE(socket_inode("/dev/null"));
  EXPECT_FALSE(socket_inode("socket:[]"));
  EXPECT_FALSE(socket_inode("socket:[12x]"));
  EXPECT_FALSE(socket_inode("anon_inode:[eventfd]"));
}

TEST(Passwd, MapsUidsToNamesAndSkipsJunk) {
  auto users = parse_passwd(
      "root:x:0:0:root:/root:/bin/bash\n# comment\nbroken line\nalice:x:1000:1000::/home/alice:"
      "/bin/sh\ndup:x:1000:1000::/:/bin/sh\nbad:x:notanumber:0::/:/bin/sh\n");
  EXPECT_EQ(users.size(), 2U);
  EXPECT_EQ(users[0], "root");
  EXPECT_EQ(users[1000], "alice");
}

TEST(Route, DefaultInterfaceHasTheLowestMetric) {
  const char* route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth1\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
      "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
      "eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
  EXPECT_EQ(default_route_interface(route), "eth0");
  EXPECT_FALSE(
      default_route_interface("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\n"
                              "eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"));
}

TEST(Status, RealUid) {
  EXPECT_EQ(status_uid("Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t1\n"), 1000U);
  EXPECT_FALSE(status_uid("Name:\tx\n"));
}

// ---- sock_diag answers built as the kernel lays them out --------------------------------------

void append(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  out.insert(out.end(), b, b + n);
  out.resize(NLMSG_ALIGN(out.size()), 0);
}

// One SOCK_DIAG_BY_FAMILY message; `info_len` bytes of tcp_info (0: no attribute).
std::vector<std::uint8_t> diag_message(int family, const std::vector<std::uint8_t>& src,
                                       std::uint16_t sport, const std::vector<std::uint8_t>& dst,
                                       std::uint16_t dport, std::uint32_t inode, std::uint32_t uid,
                                       std::uint64_t acked, std::uint64_t received,
                                       std::size_t info_len = sizeof(tcp_info)) {
  inet_diag_msg m{};
  m.idiag_family = static_cast<std::uint8_t>(family);
  m.idiag_state = 1;  // established
  m.id.idiag_sport = htons(sport);
  m.id.idiag_dport = htons(dport);
  std::memcpy(m.id.idiag_src, src.data(), src.size());
  std::memcpy(m.id.idiag_dst, dst.data(), dst.size());
  m.idiag_uid = uid;
  m.idiag_inode = inode;
  tcp_info info{};
  info.tcpi_bytes_acked = acked;
  info.tcpi_bytes_received = received;
  std::vector<std::uint8_t> body;
  append(body, &m, sizeof(m));
  if (info_len > 0) {
    rtattr a{};
    a.rta_type = INET_DIAG_INFO;
    a.rta_len = static_cast<unsigned short>(RTA_LENGTH(info_len));
    std::vector<std::uint8_t> attr;
    attr.insert(attr.end(), reinterpret_cast<std::uint8_t*>(&a),
                reinterpret_cast<std::uint8_t*>(&a) + sizeof(a));
    attr.insert(attr.end(), reinterpret_cast<std::uint8_t*>(&info),
                reinterpret_cast<std::uint8_t*>(&info) + info_len);
    append(body, attr.data(), attr.size());
  }
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(NLMSG_HDRLEN + body.size());
  h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  std::vector<std::uint8_t> out;
  append(out, &h, sizeof(h));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<std::uint8_t> control(std::uint16_t type, int error = 0) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_len = NLMSG_HDRLEN + sizeof(int);
  std::vector<std::uint8_t> out;
  append(out, &h, sizeof(h));
  append(out, &error, sizeof(error));
  return out;
}

std::vector<std::uint8_t> cat(const std::vector<std::vector<std::uint8_t>>& parts) {
  std::vector<std::uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(InetDiag, ReadsAddressesOwnersAndByteCounters) {
  auto v4 = diag_message(AF_INET, {10, 0, 0, 5}, 41000, {203, 0, 113, 7}, 443, 9001, 1000,
                         123456789012ULL, 42);
  std::vector<std::uint8_t> six(16, 0);
  six[0] = 0x20;
  six[1] = 0x01;
  six[2] = 0x0d;
  six[3] = 0xb8;
  six[15] = 1;
  std::vector<std::uint8_t> lo6(16, 0);
  lo6[15] = 1;
  auto v6 = diag_message(AF_INET6, lo6, 22, six, 50000, 9002, 0, 7, 8);
  auto batch = parse_inet_diag(cat({v4, v6}));
  ASSERT_TRUE(batch) << batch.error().what();
  EXPECT_FALSE(batch->done);
  ASSERT_EQ(batch->sockets.size(), 2U);
  const auto& a = batch->sockets[0];
  EXPECT_EQ(a.protocol, Protocol::kTcp);
  EXPECT_EQ(a.local, "10.0.0.5:41000");
  EXPECT_EQ(a.remote, "203.0.113.7:443");
  EXPECT_EQ(a.remote_address, "203.0.113.7");
  EXPECT_EQ(a.inode, 9001U);
  EXPECT_EQ(a.uid, 1000U);
  EXPECT_EQ(a.bytes_sent, 123456789012ULL);
  EXPECT_EQ(a.bytes_received, 42U);
  EXPECT_FALSE(a.loopback);
  const auto& b = batch->sockets[1];
  EXPECT_EQ(b.local, "[::1]:22");
  EXPECT_EQ(b.remote, "[2001:db8::1]:50000");
  EXPECT_EQ(b.bytes_sent, 7U);
  EXPECT_EQ(b.bytes_received, 8U);
}

TEST(InetDiag, DoneEndsTheDumpAndLoopbackIsMarked) {
  auto m = diag_message(AF_INET, {127, 0, 0, 1}, 1, {127, 0, 0, 2}, 2, 5, 0, 1, 1);
  auto batch = parse_inet_diag(cat({m, control(NLMSG_DONE)}));
  ASSERT_TRUE(batch);
  EXPECT_TRUE(batch->done);
  ASSERT_EQ(batch->sockets.size(), 1U);
  EXPECT_TRUE(batch->sockets[0].loopback);
}

TEST(InetDiag, AShortTcpInfoLeavesTheCountersAbsent) {
  // An old kernel's tcp_info ends before tcpi_bytes_acked.
  auto m = diag_message(AF_INET, {10, 0, 0, 1}, 1, {10, 0, 0, 2}, 2, 5, 0, 99, 99,
                        offsetof(tcp_info, tcpi_bytes_acked));
  auto batch = parse_inet_diag(m);
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->sockets.size(), 1U);
  EXPECT_FALSE(batch->sockets[0].bytes_sent);
  EXPECT_FALSE(batch->sockets[0].bytes_received);
  auto no_info =
      parse_inet_diag(diag_message(AF_INET, {10, 0, 0, 1}, 1, {10, 0, 0, 2}, 2, 5, 0, 99, 99, 0));
  ASSERT_TRUE(no_info);
  EXPECT_FALSE(no_info->sockets[0].bytes_sent);
}

TEST(InetDiag, ErrorsAndTruncationAreErrors) {
  auto err = parse_inet_diag(control(NLMSG_ERROR, -EPERM));
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().what().find("sock_diag"), std::string::npos);
  EXPECT_NE(err.error().what().find(std::strerror(EPERM)), std::string::npos);

  // A damaged code whose negation does not fit an int (fuzz/crashes-found/netproc-…).
  auto odd = parse_inet_diag(control(NLMSG_ERROR, std::numeric_limits<int>::min()));
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().what().find("error 2147483648 (not an errno)"), std::string::npos)
      << odd.error().what();

  auto m = diag_message(AF_INET, {10, 0, 0, 1}, 1, {10, 0, 0, 2}, 2, 5, 0, 1, 1);
  m.resize(m.size() - 8);
  auto cut = parse_inet_diag(m);
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().what().find("runs past"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::netproc
