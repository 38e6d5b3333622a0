// SPDX-License-Identifier: Apache-2.0
// Tests for check_network on hand-built inputs (the near/far verdict, NIC counters, DNS), and
// end to end from probes of loopback responders to the finding.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "doctor/checks/checks.h"
#include "doctor/live/probe.h"
#include "doctor/tests/lossy_responder.h"

namespace cardiac::doctor {
namespace {

// The probes and the loopback responders talk over real sockets, so they run on real time.
const SystemClock kNetworkClock;

constexpr TimeNs kNow = 1'700'000'000LL * kNsPerSec;

ProbeResult probe_of(std::string target, std::string role, unsigned sent, std::vector<double> rtts,
                     std::string method = "icmp") {
  ProbeResult p;
  p.target = target;
  p.role = std::move(role);
  p.method = std::move(method);
  p.address = std::move(target);
  p.sent = sent;
  p.received = static_cast<unsigned>(rtts.size());
  p.rtt_ms = std::move(rtts);
  return p;
}

std::vector<double> rtts(unsigned n, double ms) {
  return std::vector<double>(n, ms);
}

DoctorInput with_probes(std::vector<ProbeResult> probes) {
  DoctorInput in;
  in.now = kNow;
  in.host_samples.emplace_back();
  in.host_samples.back().taken_at = kNow;
  in.probes = std::move(probes);
  return in;
}

std::vector<Finding> run(const DoctorInput& in) {
  std::vector<Finding> out;
  check_network(in, out);
  for (const auto& f : out) EXPECT_EQ(f.category, Category::kNetwork) << f.id;
  return out;
}

// Copies, so that a temporary result can be filtered in one expression.
std::vector<Finding> with_id(const std::vector<Finding>& fs, std::string_view id) {
  std::vector<Finding> out;
  std::copy_if(fs.begin(), fs.end(), std::back_inserter(out),
               [&](const Finding& f) { return f.id == id; });
  return out;
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

bool any_action(const Finding& f, std::string_view part) {
  return std::any_of(f.actions.begin(), f.actions.end(),
                     [&](const std::string& a) { return contains(a, part); });
}

TEST(CheckNetwork, HealthyProbesAndNicsSayNothing) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(10, 0.3)),
                                probe_of("10.1.0.5", "target", 10, rtts(10, 0.8)),
                                probe_of("tcp://storage:443", "target", 10, rtts(10, 25), "tcp")});
  in.rates = host::HostRates{};
  in.rates->interval_s = 10;
  in.rates->nics.push_back({"eth0", 1e8, 1e8, 8.0, 8.0, 0, 0, 0, 0});
  EXPECT_TRUE(run(in).empty());
}

TEST(CheckNetwork, LossyGatewayIsLocal) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(7, 0.4)),
                                probe_of("10.1.0.5", "target", 10, rtts(6, 1.0)),
                                probe_of("10.2.0.5", "target", 10, rtts(10, 1.0))});
  auto out = run(in);
  auto loss = with_id(out, "network.loss");
  ASSERT_EQ(loss.size(), 1u);  // one finding: the far loss follows from the near one
  EXPECT_EQ(loss[0].severity, Severity::kCritical);
  EXPECT_TRUE(contains(loss[0].title, "local")) << loss[0].title;
  EXPECT_TRUE(contains(loss[0].title, "192.0.2.1")) << loss[0].title;
  EXPECT_TRUE(any_action(loss[0], "ethtool -S"));
  EXPECT_EQ(loss[0].confidence, Confidence::kMedium);
  // The evidence charts every probe: the subjects and the comparison.
  ASSERT_EQ(loss[0].evidence.size(), 3u);
  EXPECT_EQ(loss[0].evidence[0].kind, "probe");
  EXPECT_EQ(loss[0].evidence[0].metric, "rtt");
  EXPECT_EQ(loss[0].evidence[0].series.size(), 7u);
  EXPECT_EQ(loss[0].evidence[0].series[1].first, kNow + 100 * kNsPerMs);
}

TEST(CheckNetwork, CleanGatewayEveryFarTargetLossyIsThePath) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 20, rtts(20, 0.3)),
                                probe_of("10.1.0.5", "target", 20, rtts(15, 1.0)),
                                probe_of("10.2.0.5", "target", 20, rtts(16, 1.0))});
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(loss[0].title, "path")) << loss[0].title;
  EXPECT_TRUE(contains(loss[0].title, "2 targets")) << loss[0].title;
  EXPECT_EQ(loss[0].severity, Severity::kCritical);
  EXPECT_EQ(loss[0].confidence, Confidence::kMedium);
  EXPECT_TRUE(any_action(loss[0], "mtr"));
}

TEST(CheckNetwork, OneFarTargetAloneCannotTellPathFromRemote) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(10, 0.3)),
                                probe_of("10.1.0.5", "target", 10, rtts(8, 1.0))});
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(loss[0].title, "path")) << loss[0].title;
  EXPECT_EQ(loss[0].confidence, Confidence::kLow);
  EXPECT_TRUE(contains(loss[0].explanation, "Only one far target")) << loss[0].explanation;
}

TEST(CheckNetwork, OneBadFarTargetAmongGoodOnesIsRemote) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(10, 0.3)),
                                probe_of("10.1.0.5", "target", 10, rtts(10, 1.0)),
                                probe_of("tcp://10.2.0.5:443", "target", 10, {}, "tcp")});
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(loss[0].title, "remote")) << loss[0].title;
  EXPECT_TRUE(contains(loss[0].title, "No answer from tcp://10.2.0.5:443")) << loss[0].title;
  EXPECT_FALSE(contains(loss[0].title, "10.1.0.5"));
  EXPECT_TRUE(any_action(loss[0], "Check 10.2.0.5 itself"));
  EXPECT_EQ(loss[0].severity, Severity::kCritical);
}

TEST(CheckNetwork, SingleLostProbeIsAWarningWithLowConfidence) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(9, 0.3))});
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].severity, Severity::kWarning);
  EXPECT_EQ(loss[0].confidence, Confidence::kLow);
}

TEST(CheckNetwork, ThreeProbesAreThinEvidence) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 3, rtts(1, 0.3))});
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].confidence, Confidence::kLow);
  EXPECT_TRUE(contains(loss[0].explanation, "thin evidence"));
}

TEST(CheckNetwork, SlowGatewayAndFarIsLocal) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(10, 5.0)),
                                probe_of("10.1.0.5", "target", 10, rtts(10, 400))});
  auto out = run(in);
  auto lat = with_id(out, "network.latency");
  ASSERT_EQ(lat.size(), 1u);
  EXPECT_EQ(lat[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(lat[0].title, "2 targets")) << lat[0].title;
  EXPECT_TRUE(contains(lat[0].title, "local")) << lat[0].title;
  EXPECT_TRUE(contains(lat[0].explanation, "control-plane"));
  EXPECT_TRUE(with_id(out, "network.loss").empty());
}

TEST(CheckNetwork, BadGatewayWithCleanTrafficThroughItIsTheGatewayItself) {
  // 5 ms is slow for a LAN hop and 20 % ICMP loss is a lot, but the far target, reached
  // through that gateway, is clean: the router's own replies are slow or rate-limited.
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(8, 5.0)),
                                probe_of("10.1.0.5", "target", 10, rtts(10, 5.0))});
  auto out = run(in);
  auto lat = with_id(out, "network.latency");
  auto loss = with_id(out, "network.loss");
  ASSERT_EQ(lat.size(), 1u);
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(lat[0].title, "the gateway 192.0.2.1")) << lat[0].title;
  EXPECT_TRUE(contains(loss[0].title, "gateway's own replies")) << loss[0].title;
  EXPECT_FALSE(contains(loss[0].title, "local"));
  EXPECT_EQ(loss[0].severity, Severity::kWarning);  // not critical: forwarding is fine
  EXPECT_EQ(loss[0].confidence, Confidence::kLow);
}

TEST(CheckNetwork, SlowLoopbackIsLocalWhateverTheFarEndDoes) {
  DoctorInput in = with_probes({probe_of("127.0.0.1", "loopback", 10, rtts(10, 3.0)),
                                probe_of("10.1.0.5", "target", 10, rtts(10, 3.0))});
  auto lat = with_id(run(in), "network.latency");
  ASSERT_EQ(lat.size(), 1u);
  EXPECT_TRUE(contains(lat[0].title, "loopback 127.0.0.1")) << lat[0].title;
  EXPECT_TRUE(contains(lat[0].title, "local")) << lat[0].title;
}

TEST(CheckNetwork, VerySlowFarTargetIsCritical) {
  DoctorInput in = with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(10, 0.3)),
                                probe_of("10.1.0.5", "target", 10, rtts(10, 0.5)),
                                probe_of("10.9.0.5", "target", 10, rtts(10, 600))});
  auto lat = with_id(run(in), "network.latency");
  ASSERT_EQ(lat.size(), 1u);
  EXPECT_EQ(lat[0].severity, Severity::kCritical);
  EXPECT_TRUE(contains(lat[0].title, "remote"));
}

TEST(CheckNetwork, Jitter) {
  DoctorInput in =
      with_probes({probe_of("192.0.2.1", "gateway", 10, rtts(10, 0.3)),
                   probe_of("10.1.0.5", "target", 10, {10, 90, 12, 85, 11, 95, 10, 80, 12, 90})});
  auto jit = with_id(run(in), "network.jitter");
  ASSERT_EQ(jit.size(), 1u);
  EXPECT_EQ(jit[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(jit[0].title, "10.1.0.5"));
}

TEST(CheckNetwork, DnsSlowFailingAndCritical) {
  auto named = [](std::string target, double ms, bool resolved) {
    ProbeResult p = probe_of(target, "target", resolved ? 10 : 0, rtts(resolved ? 10 : 0, 1.0));
    p.dns_ms = ms;
    if (!resolved) {
      p.address.clear();
      p.error = "cannot resolve " + target + ": no such name";
    }
    return p;
  };
  auto slow = with_id(run(with_probes({named("db.example", 350, true)})), "network.dns");
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(slow[0].title, "slow"));
  EXPECT_EQ(slow[0].confidence, Confidence::kLow);

  auto fast_ok = run(with_probes({named("db.example", 3, true)}));
  EXPECT_TRUE(with_id(fast_ok, "network.dns").empty());

  auto out = run(with_probes({named("gone.example", 20, false)}));
  auto failed = with_id(out, "network.dns");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(failed[0].title, "gone.example"));
  EXPECT_TRUE(with_id(out, "network.probe_failed").empty());  // told once, as DNS

  auto hung = with_id(run(with_probes({named("gone.example", 2000, false)})), "network.dns");
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_EQ(hung[0].severity, Severity::kCritical);
}

TEST(CheckNetwork, ProbeThatCouldNotRunIsInfo) {
  ProbeResult p = probe_of("udp://[2001:db8::1]:7", "target", 0, {});
  p.error = "udp://[2001:db8::1]:7: udp socket: Address family not supported by protocol";
  auto f = with_id(run(with_probes({p})), "network.probe_failed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_TRUE(contains(f[0].explanation, "Address family"));
}

host::HostSnapshot host_at(TimeNs t, std::vector<host::NetDevice> nics) {
  host::HostSnapshot s;
  s.taken_at = t;
  s.nics = std::move(nics);
  return s;
}

host::NetDevice nic(std::string name, std::uint64_t bytes, std::string state,
                    std::optional<std::uint64_t> speed = 10000) {
  host::NetDevice d;
  d.name = std::move(name);
  d.rx_bytes = bytes;
  d.tx_bytes = bytes;
  d.rx_packets = bytes / 1000;
  d.tx_packets = bytes / 1000;
  d.operstate = std::move(state);
  d.speed_mbps = speed;
  return d;
}

// Two host samples ten seconds apart and the rates between them.
DoctorInput with_nics(std::vector<host::NetDevice> before, std::vector<host::NetDevice> after) {
  DoctorInput in;
  in.now = kNow;
  in.host_samples.push_back(host_at(kNow - 10 * kNsPerSec, std::move(before)));
  in.host_samples.push_back(host_at(kNow, std::move(after)));
  in.rates = host::compute_rates(in.host_samples.front(), in.host_samples.back());
  return in;
}

TEST(CheckNetwork, SaturatedNicWithFigures) {
  // 11.8 GB in 10 s on a 10 Gb/s link: 94 %.
  auto in = with_nics({nic("eth0", 1'000'000'000'000, "up")},
                      {nic("eth0", 1'000'000'000'000 + 11'800'000'000, "up")});
  auto f = with_id(run(in), "network.nic_saturated");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(f[0].title, "eth0")) << f[0].title;
  EXPECT_TRUE(contains(f[0].title, "10 Gb/s")) << f[0].title;
  EXPECT_TRUE(contains(f[0].title, "94 %")) << f[0].title;
  ASSERT_FALSE(f[0].evidence.empty());
  EXPECT_EQ(f[0].evidence[0].series.size(), 1u);
  EXPECT_EQ(f[0].evidence[0].threshold, 90.0);
}

TEST(CheckNetwork, RisingErrorsAndDrops) {
  auto a = nic("eth0", 1'000'000'000, "up");
  auto b = nic("eth0", 2'000'000'000, "up");
  b.rx_errors = 12;
  auto in = with_nics({a}, {b});
  auto f = with_id(run(in), "network.nic_errors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);  // 12 of 2,000,000 packets
  EXPECT_EQ(f[0].confidence, Confidence::kHigh);
  EXPECT_TRUE(contains(f[0].title, "12 errors")) << f[0].title;
  ASSERT_EQ(f[0].evidence.size(), 1u);
  EXPECT_EQ(f[0].evidence[0].kind, "counter");
  EXPECT_TRUE(contains(f[0].evidence[0].text, "rx_errors +12")) << f[0].evidence[0].text;

  b.rx_errors = 5000;  // 0.25 % of the packets
  f = with_id(run(with_nics({a}, {b})), "network.nic_errors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);

  b.rx_errors = 0;
  b.rx_drops = 5;  // 0.5/s: below the line
  EXPECT_TRUE(with_id(run(with_nics({a}, {b})), "network.nic_errors").empty());
  b.rx_drops = 300;
  f = with_id(run(with_nics({a}, {b})), "network.nic_errors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(contains(f[0].title, "30.0/s")) << f[0].title;
  EXPECT_EQ(f[0].confidence, Confidence::kMedium);
}

TEST(CheckNetwork, LinkDownIgnoresVirtualAndUnused) {
  std::vector<host::NetDevice> nics = {nic("eth0", 1000000, "up"),    nic("eth1", 5000000, "down"),
                                       nic("eth2", 0, "down"),        nic("docker0", 5000, "down"),
                                       nic("veth12ab", 5000, "down"), nic("virbr0", 5000, "down"),
                                       nic("ib0", 9000000, "down")};
  auto in = with_nics(nics, nics);
  auto f = with_id(run(in), "network.link_down");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_TRUE(contains(f[0].title, "eth1")) << f[0].title;
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(f[1].title, "InfiniBand ib0")) << f[1].title;
  EXPECT_TRUE(any_action(f[1], "ibstat"));
}

TEST(CheckNetwork, LinkThatWentDownDuringTheWindowIsCritical) {
  auto in = with_nics({nic("eth1", 5000000, "up")}, {nic("eth1", 5000000, "down")});
  auto f = with_id(run(in), "network.link_down");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_TRUE(contains(f[0].title, "during the window"));
}

TEST(CheckNetwork, NicErrorsMakeFarLossLocalWithoutAGatewayProbe) {
  auto a = nic("eth0", 1'000'000'000, "up");
  auto b = nic("eth0", 2'000'000'000, "up");
  b.rx_errors = 40;
  auto in = with_nics({a}, {b});
  in.probes = {probe_of("10.1.0.5", "target", 10, rtts(6, 1.0))};
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(loss[0].title, "local")) << loss[0].title;
  EXPECT_EQ(loss[0].confidence, Confidence::kLow);
  auto counters = std::count_if(loss[0].evidence.begin(), loss[0].evidence.end(),
                                [](const Evidence& e) { return e.kind == "counter"; });
  EXPECT_EQ(counters, 1);
}

TEST(CheckNetwork, NoGatewayNoNicSignsNoVerdict) {
  DoctorInput in = with_probes({probe_of("10.1.0.5", "target", 10, rtts(6, 1.0))});
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_FALSE(contains(loss[0].title, "local"));
  EXPECT_FALSE(contains(loss[0].title, "path"));
  EXPECT_TRUE(contains(loss[0].explanation, "cannot be told"));
  EXPECT_TRUE(any_action(loss[0], "gateway"));
}

// End to end: real probes of loopback responders, judged. The clean responder stands in for
// the gateway (near); the lossy one is the far target.
TEST(CheckNetworkEndToEnd, LossyFarTargetBehindACleanGateway) {
  auto clean = loopback::UdpEchoResponder::start({}, kNetworkClock);
  auto lossy = loopback::UdpEchoResponder::start({loopback::EchoBehaviour::drop_every(4), {}},
                                                 kNetworkClock);
  auto good_far = loopback::UdpEchoResponder::start({}, kNetworkClock);
  ASSERT_TRUE(clean && lossy && good_far);
  ProbeOptions o;
  o.count = 20;
  o.interval = 5 * kNsPerMs;
  o.timeout = kNsPerSec;

  // One far target: everything far is bad, so the verdict is "path" (with low confidence and
  // a note that it cannot be told from the remote host itself).
  DoctorInput in =
      with_probes(run_probes({(*lossy)->target()}, (*clean)->target(), o, kNetworkClock));
  auto loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(loss[0].title, (*lossy)->target())) << loss[0].title;
  EXPECT_TRUE(contains(loss[0].title, "25 %")) << loss[0].title;
  EXPECT_TRUE(contains(loss[0].title, "path")) << loss[0].title;
  EXPECT_EQ(loss[0].confidence, Confidence::kLow);

  // A second far target that answers cleanly: the verdict becomes "remote".
  in = with_probes(run_probes({(*good_far)->target(), (*lossy)->target()}, (*clean)->target(), o,
                              kNetworkClock));
  loss = with_id(run(in), "network.loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_TRUE(contains(loss[0].title, (*lossy)->target())) << loss[0].title;
  EXPECT_TRUE(contains(loss[0].title, "remote")) << loss[0].title;
  EXPECT_EQ(loss[0].severity, Severity::kCritical);
}

// A refused connection is the far host answering: the path works, nothing listens on the port.
// A warning naming the port, never a critical network loss; the summary line says so too.
TEST(CheckNetworkEndToEnd, RefusedConnectionIsAClosedPortNotLoss) {
  auto closed = loopback::ClosedTcpPort::reserve();
  auto clean = loopback::UdpEchoResponder::start({}, kNetworkClock);
  ASSERT_TRUE(closed && clean);
  ProbeOptions o;
  o.count = 5;
  o.interval = 5 * kNsPerMs;
  o.timeout = kNsPerSec;
  DoctorInput in =
      with_probes(run_probes({(*closed)->target()}, (*clean)->target(), o, kNetworkClock));
  auto out = run(in);
  for (const auto& f : out) EXPECT_NE(f.severity, Severity::kCritical) << f.id << ": " << f.title;
  EXPECT_TRUE(with_id(out, "network.loss").empty());
  auto port = with_id(out, "network.port_closed");
  ASSERT_EQ(port.size(), 1u);
  EXPECT_EQ(port[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(port[0].title, (*closed)->target())) << port[0].title;
  EXPECT_TRUE(contains(port[0].explanation, "path")) << port[0].explanation;
  std::string line;
  for (const auto& p : in.probes) {
    if (p.target == (*closed)->target()) line = probe_summary(p);
  }
  EXPECT_TRUE(contains(line, "5 of 5 answered (5 by a refusal)")) << line;
  EXPECT_TRUE(contains(line, "path ok, port closed")) << line;
}

TEST(CheckNetwork, ProbeSummaryNamesWhatPassed) {
  EXPECT_EQ(probe_summary(probe_of("10.1.0.5", "target", 10, rtts(10, 0.8))),
            "10.1.0.5 (icmp 10.1.0.5): 10 of 10 answered, median 0.80 ms: ok");
  EXPECT_TRUE(contains(probe_summary(probe_of("10.1.0.6", "target", 10, rtts(5, 0.8))),
                       "see the network findings"));
  ProbeResult never = probe_of("nosuch.invalid", "target", 0, {});
  never.error = "cannot resolve nosuch.invalid";
  EXPECT_EQ(probe_summary(never), "nosuch.invalid: not probed (cannot resolve nosuch.invalid)");
}

}  // namespace
}  // namespace cardiac::doctor
