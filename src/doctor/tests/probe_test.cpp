// SPDX-License-Identifier: Apache-2.0
// Tests for the probes: target syntax, the default-route parsers, and live probes that talk
// only to loopback peers started here (a lossy UDP echo, a TCP acceptor, a refused port).
#include "doctor/live/probe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "doctor/tests/lossy_responder.h"
#include "platform/fs.h"

namespace cardiac::doctor {
namespace {

using loopback::ClosedTcpPort;
using loopback::EchoBehaviour;
using loopback::TcpAcceptor;
using loopback::UdpEchoResponder;

// The probes and the responders talk over real loopback sockets, so they run on real time.
const SystemClock kClock;

// Fast pacing; the generous per-probe timeout keeps a loaded machine from turning a late
// loopback answer into a loss.
ProbeOptions fast(unsigned count) {
  ProbeOptions o;
  o.count = count;
  o.interval = 5 * kNsPerMs;
  o.timeout = kNsPerSec;
  o.deadline = 20 * kNsPerSec;
  return o;
}

std::unique_ptr<UdpEchoResponder> responder(EchoBehaviour b = {}, bool ipv6 = false) {
  auto r = UdpEchoResponder::start(std::move(b), kClock, ipv6);
  return r ? std::move(*r) : nullptr;
}

TEST(ProbeTarget, Forms) {
  auto h = parse_probe_target("10.0.0.1");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, ProbeKind::kHost);
  EXPECT_EQ(h->host, "10.0.0.1");
  EXPECT_EQ(parse_probe_target("::1")->host, "::1");
  EXPECT_EQ(parse_probe_target("[::1]")->host, "::1");
  EXPECT_EQ(parse_probe_target(" example.org ")->host, "example.org");
  auto t = parse_probe_target("tcp://storage-1:443");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, ProbeKind::kTcp);
  EXPECT_EQ(t->host, "storage-1");
  EXPECT_EQ(t->port, 443);
  auto u = parse_probe_target("udp://[::1]:7");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->kind, ProbeKind::kUdp);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 7);
}

TEST(ProbeTarget, Errors) {
  for (const char* bad : {"", "  ", "http://x:80", "tcp://x", "tcp://x:0", "tcp://x:65536",
                          "udp://:53", "tcp://::1:22", "tcp://[::1]22", "tcp://x:http"}) {
    auto r = parse_probe_target(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().what().find(bad), std::string::npos) << r.error().what();
  }
}

constexpr const char* kRoute =
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    "eth1\t00000000\t0101A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
    "eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
    "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    "eth2\t00000000\t0100000A\t0001\t0\t0\t1\t00000000\t0\t0\t0\n"  // no gateway flag
    "garbage line\n";

TEST(ProcNetRoute, LowestMetricDefault) {
  auto r = parse_proc_net_route(kRoute);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->gateway, "192.0.2.1");
  EXPECT_EQ(r->iface, "eth0");
  EXPECT_EQ(r->metric, 100u);
}

TEST(ProcNetRoute, NoneEmptyGarbage) {
  EXPECT_FALSE(parse_proc_net_route(""));
  EXPECT_FALSE(parse_proc_net_route("Iface\tDestination\tGateway\n"));
  EXPECT_FALSE(parse_proc_net_route("eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\n"));
  EXPECT_FALSE(parse_proc_net_route("eth0 00000000 zz 0003 0 0 0 00000000 0 0 0\n"));
  EXPECT_FALSE(parse_proc_net_route(std::string(100000, 'x')));
}

constexpr const char* kIpv6Route =
    "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "fd000000000000000000000000000001 00000400 00000003 00000000 00000003     eth0\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "fe800000000000000000000000000001 00000064 00000003 00000000 00000003     eth1\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";

TEST(ProcNetIpv6Route, LinkLocalGatewayKeepsScope) {
  auto r = parse_proc_net_ipv6_route(kIpv6Route);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->gateway, "fe80::1%eth1");
  EXPECT_EQ(r->metric, 100u);
  EXPECT_FALSE(parse_proc_net_ipv6_route(""));
  EXPECT_FALSE(parse_proc_net_ipv6_route("00 00 00\n"));
}

TEST(DefaultGateway, Ipv4ThenIpv6) {
  MemFs both;
  both.add_file("/proc/net/route", kRoute);
  both.add_file("/proc/net/ipv6_route", kIpv6Route);
  EXPECT_EQ(default_gateway(both), "192.0.2.1");
  MemFs v6;
  v6.add_file("/proc/net/route", "Iface\tDestination\tGateway\n");
  v6.add_file("/proc/net/ipv6_route", kIpv6Route);
  EXPECT_EQ(default_gateway(v6), "fe80::1%eth1");
  EXPECT_FALSE(default_gateway(MemFs{}));
}

TEST(ProbeUdp, CleanResponderNoLoss) {
  auto echo = responder();
  ASSERT_TRUE(echo);
  ProbeResult r = probe(echo->target(), "target", fast(10), kClock);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.method, "udp");
  EXPECT_EQ(r.address, "127.0.0.1:" + std::to_string(echo->port()));
  EXPECT_EQ(r.sent, 10u);
  EXPECT_EQ(r.received, 10u);
  EXPECT_EQ(r.rtt_ms.size(), 10u);
  EXPECT_EQ(r.loss_percent(), 0.0);
  EXPECT_FALSE(r.dns_ms);
}

TEST(ProbeUdp, DropsOneInFourOfTwenty) {
  auto echo = responder({EchoBehaviour::drop_every(4), {}});
  ASSERT_TRUE(echo);
  ProbeResult r = probe(echo->target(), "target", fast(20), kClock);
  EXPECT_EQ(r.sent, 20u);
  EXPECT_EQ(r.received, 15u);
  EXPECT_DOUBLE_EQ(r.loss_percent(), 25.0);
  EXPECT_EQ(echo->dropped(), 5u);
}

TEST(ProbeUdp, DelayIsALowerBoundOnEveryRtt) {
  auto echo = responder({{}, {30 * kNsPerMs}});
  ASSERT_TRUE(echo);
  ProbeResult r = probe(echo->target(), "target", fast(5), kClock);
  ASSERT_EQ(r.received, 5u);
  for (double ms : r.rtt_ms) EXPECT_GE(ms, 30.0);
}

TEST(ProbeUdp, ReorderedAnswerGoesToItsOwnProbe) {
  // The first answer is held back past the second one's: matching by arrival order would give
  // probe 0 the short round trip.
  auto echo = responder({{}, {200 * kNsPerMs, 0}});
  ASSERT_TRUE(echo);
  ProbeOptions o = fast(2);
  o.interval = 20 * kNsPerMs;
  ProbeResult r = probe(echo->target(), "target", o, kClock);
  ASSERT_EQ(r.received, 2u);
  EXPECT_GE(r.rtt_ms[0], 200.0);
}

TEST(ProbeUdp, AnswerAfterItsTimeoutIsLost) {
  // Probe 0's answer arrives after its timeout, while probes 1-3 are still in flight.
  auto echo = responder({{}, {900 * kNsPerMs, 0, 0, 0}});
  ASSERT_TRUE(echo);
  ProbeOptions o = fast(4);
  o.interval = 250 * kNsPerMs;
  o.timeout = 400 * kNsPerMs;
  ProbeResult r = probe(echo->target(), "target", o, kClock);
  EXPECT_EQ(r.sent, 4u);
  EXPECT_EQ(r.received, 3u);
  EXPECT_DOUBLE_EQ(r.loss_percent(), 25.0);
}

TEST(ProbeUdp, BlackHoleLosesEverythingWithoutHanging) {
  auto echo = responder({{true}, {}});
  ASSERT_TRUE(echo);
  ProbeOptions o = fast(3);
  o.timeout = 100 * kNsPerMs;
  ProbeResult r = probe(echo->target(), "target", o, kClock);
  EXPECT_EQ(r.sent, 3u);
  EXPECT_EQ(r.received, 0u);
  EXPECT_TRUE(r.rtt_ms.empty());
}

TEST(ProbeUdp, DeadlineStopsSendingAndSaysSo) {
  auto echo = responder({{true}, {}});
  ASSERT_TRUE(echo);
  ProbeOptions o = fast(1000);
  o.timeout = 50 * kNsPerMs;
  o.deadline = 200 * kNsPerMs;
  ProbeResult r = probe(echo->target(), "target", o, kClock);
  EXPECT_GT(r.sent, 0u);
  EXPECT_LT(r.sent, 1000u);
  EXPECT_NE(r.error.find("deadline"), std::string::npos) << r.error;
}

TEST(ProbeUdp, Ipv6Loopback) {
  auto echo = responder({}, true);
  if (!echo) GTEST_SKIP() << "no IPv6 loopback here";
  ProbeResult r = probe(echo->target(), "target", fast(3), kClock);
  EXPECT_EQ(r.address, "[::1]:" + std::to_string(echo->port()));
  EXPECT_EQ(r.received, 3u);
}

TEST(ProbeTcp, ConnectsToALoopbackListener) {
  auto acceptor = TcpAcceptor::start();
  ASSERT_TRUE(acceptor) << acceptor.error().what();
  ProbeResult r = probe((*acceptor)->target(), "target", fast(5), kClock);
  EXPECT_EQ(r.method, "tcp");
  EXPECT_EQ(r.sent, 5u);
  EXPECT_EQ(r.received, 5u);
  EXPECT_EQ(r.error, "");
}

TEST(ProbeTcp, ClosedPortIsAnAnswerCountedAsRefused) {
  // The reset came from the host: the path works, only the service is missing. Each refusal
  // is an answer with its round trip, and counted apart so the check can name the closed port.
  auto closed = ClosedTcpPort::reserve();
  ASSERT_TRUE(closed) << closed.error().what();
  ProbeResult r = probe((*closed)->target(), "target", fast(3), kClock);
  EXPECT_EQ(r.sent, 3u);
  EXPECT_EQ(r.received, 3u);
  EXPECT_EQ(r.refused, 3u);
  EXPECT_EQ(r.rtt_ms.size(), 3u);
  EXPECT_EQ(r.error, "");
}

TEST(ProbeHost, IcmpOnLoopbackOrACleanFallback) {
  ProbeResult r = probe("127.0.0.1", "loopback", fast(3), kClock);
  EXPECT_TRUE(r.method == "icmp" || r.method == "tcp") << r.method;
  if (r.method == "icmp") {
    EXPECT_EQ(r.address, "127.0.0.1");
  }
  EXPECT_EQ(r.sent, 3u);
  EXPECT_EQ(r.received, 3u) << r.error;
}

TEST(ProbeHost, TcpFallbackWhenIcmpIsNotUsed) {
  ProbeOptions o = fast(3);
  o.allow_icmp = false;
  ProbeResult r = probe("127.0.0.1", "loopback", o, kClock);
  EXPECT_EQ(r.method, "tcp");
  EXPECT_TRUE(r.address == "127.0.0.1:443" || r.address == "127.0.0.1:22") << r.address;
  // A refusal is an answer from the host when it is only asked whether it is there.
  EXPECT_EQ(r.received, 3u) << r.error;
}

TEST(ProbeHost, Ipv6LoopbackIcmpOrFallback) {
  ProbeResult r = probe("::1", "loopback", fast(2), kClock);
  if (r.sent == 0) GTEST_SKIP() << "no IPv6 loopback: " << r.error;
  EXPECT_TRUE(r.method == "icmp" || r.method == "tcp") << r.method;
  EXPECT_EQ(r.received, 2u) << r.error;
}

TEST(ProbeDns, LocalhostIsResolvedAndTimed) {
  ProbeResult r = probe("localhost", "loopback", fast(2), kClock);
  ASSERT_TRUE(r.dns_ms);
  EXPECT_GE(*r.dns_ms, 0.0);
  EXPECT_TRUE(r.address.starts_with("127.") || r.address.starts_with("::1") ||
              r.address.starts_with("[::1]"))
      << r.address;
  EXPECT_EQ(r.received, 2u) << r.error;
}

// A name that fails to resolve is not probed here: asking the system resolver would send a
// query off this machine. check_network_test covers how a failed lookup is reported.

TEST(ProbeTarget, BadTargetIsAnErrorNotAProbe) {
  ProbeResult r = probe("ftp://x:21", "target", fast(2), kClock);
  EXPECT_EQ(r.sent, 0u);
  EXPECT_NE(r.error.find("ftp://x:21"), std::string::npos);
}

TEST(RunProbes, GatewayFirstTargetsInOrderConcurrently) {
  auto a = responder();
  auto b = responder();
  ASSERT_TRUE(a && b);
  std::vector<double> progress;
  auto results = run_probes({b->target(), a->target(), "tcp://x"}, a->target(), fast(3), kClock,
                            [&](double f) { progress.push_back(f); });
  ASSERT_EQ(results.size(), 3u);  // the target equal to the gateway is probed once
  EXPECT_EQ(results[0].role, "gateway");
  EXPECT_EQ(results[0].target, a->target());
  EXPECT_EQ(results[1].role, "target");
  EXPECT_EQ(results[1].target, b->target());
  EXPECT_EQ(results[0].received, 3u);
  EXPECT_EQ(results[1].received, 3u);
  EXPECT_EQ(results[2].sent, 0u);
  EXPECT_FALSE(results[2].error.empty());
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_DOUBLE_EQ(progress.back(), 1.0);
}

TEST(RunProbes, NothingToProbe) {
  EXPECT_TRUE(run_probes({}, std::nullopt, fast(1), kClock).empty());
}

}  // namespace
}  // namespace cardiac::doctor
