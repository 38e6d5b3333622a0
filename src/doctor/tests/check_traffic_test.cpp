// SPDX-License-Identifier: Apache-2.0
// Traffic by process in the doctor, on inputs built by hand: security.uplink_flood and the
// talkers that network.nic_saturated names; the report's `traffic` in JSON and text.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "doctor/checks/checks.h"
#include "doctor/render/render.h"
#include "host/host.h"

namespace cardiac::doctor {
namespace {

constexpr TimeNs kTrafficNow = 1'700'000'000LL * kNsPerSec;
constexpr double kWindow = 10;
constexpr std::uint64_t kLinkMbps = 10'000;             // 10 Gb/s
constexpr double kLinkBytesPerS = kLinkMbps * 1e6 / 8;  // 1.25 GB/s

bool contains_text(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

netproc::Talker talker(std::uint32_t pid, std::string user, std::string cmd, double sent_per_s,
                       double received_per_s, std::size_t remotes) {
  netproc::Talker t;
  t.process = {pid, 1000, std::move(user), cmd.substr(0, cmd.find(' ')), cmd};
  t.sent_bytes_per_s = sent_per_s;
  t.received_bytes_per_s = received_per_s;
  t.sent_bytes = static_cast<std::uint64_t>(sent_per_s * kWindow);
  t.received_bytes = static_cast<std::uint64_t>(received_per_s * kWindow);
  t.sent_link_percent = 100 * sent_per_s / kLinkBytesPerS;
  t.received_link_percent = 100 * received_per_s / kLinkBytesPerS;
  t.remote_count = remotes;
  for (std::size_t i = 0; i < std::min<std::size_t>(remotes, 5); ++i) {
    t.top_remotes.push_back("198.51.100." + std::to_string(i + 1));
  }
  t.sockets = remotes;
  return t;
}

host::NetDevice nic(std::uint64_t tx_bytes) {
  host::NetDevice d;
  d.name = "eth0";
  d.tx_bytes = tx_bytes;
  d.rx_bytes = 1000;
  d.speed_mbps = kLinkMbps;
  d.operstate = "up";
  return d;
}

// A 10 s window in which eth0 transmitted at `tx_percent` of its 10 Gb/s, and these talkers.
DoctorInput with_talkers(std::vector<netproc::Talker> talkers, double tx_percent = 10) {
  DoctorInput in;
  in.now = kTrafficNow;
  host::HostSnapshot a;
  a.taken_at = kTrafficNow - 10 * kNsPerSec;
  a.nics = {nic(1'000'000)};
  host::HostSnapshot b;
  b.taken_at = kTrafficNow;
  b.nics = {nic(1'000'000 + static_cast<std::uint64_t>(tx_percent / 100 * kLinkBytesPerS * 10))};
  in.host_samples = {a, b};
  in.rates = host::compute_rates(a, b);
  netproc::Traffic t;
  t.window_s = kWindow;
  t.link = {"eth0", kLinkMbps};
  for (const auto& x : talkers) {
    t.sent_bytes += x.sent_bytes;
    t.received_bytes += x.received_bytes;
    t.sockets += x.sockets;
  }
  t.sent_bytes_per_s = static_cast<double>(t.sent_bytes) / kWindow;
  t.received_bytes_per_s = static_cast<double>(t.received_bytes) / kWindow;
  t.talkers = std::move(talkers);
  in.traffic = std::move(t);
  return in;
}

std::vector<Finding> flood(const DoctorInput& in) {
  std::vector<Finding> out;
  check_traffic(in, out);
  for (const auto& f : out) {
    EXPECT_EQ(f.id, "security.uplink_flood");
    EXPECT_EQ(f.category, Category::kSecurity);
  }
  return out;
}

TEST(UplinkFlood, OneProcessHoldingASaturatedUplinkToManyRemotesIsCritical) {
  // 95 % of the link, 9.2 of it from one process to 412 addresses; a trainer sends a little.
  auto in = with_talkers(
      {talker(4242, "www-data", "/tmp/.x/kworkerd -o pool", 0.92 * kLinkBytesPerS, 1e5, 412),
       talker(100, "alice", "python train.py", 0.03 * kLinkBytesPerS, 1e6, 2)},
      95);
  auto f = flood(in);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_TRUE(contains_text(f[0].title, "pid 4242 (www-data, /tmp/.x/kworkerd)")) << f[0].title;
  EXPECT_TRUE(contains_text(f[0].title, "412 remote addresses")) << f[0].title;
  EXPECT_TRUE(contains_text(f[0].explanation, "saturated")) << f[0].explanation;
  ASSERT_GE(f[0].evidence.size(), 2U);
  EXPECT_EQ(f[0].evidence[0].kind, "process");
  EXPECT_TRUE(contains_text(f[0].evidence[0].text, "/tmp/.x/kworkerd -o pool"))
      << f[0].evidence[0].text;
  EXPECT_TRUE(contains_text(f[0].evidence[0].text, "92 % of eth0")) << f[0].evidence[0].text;
  EXPECT_TRUE(contains_text(f[0].evidence[0].text, "198.51.100.1")) << f[0].evidence[0].text;
  std::string actions;
  for (const auto& a : f[0].actions) actions += a + "\n";
  EXPECT_TRUE(contains_text(actions, "isolate")) << actions;
  EXPECT_TRUE(contains_text(actions, "ss -tinp")) << actions;
  EXPECT_TRUE(contains_text(actions, "/proc/4242/exe")) << actions;
  EXPECT_TRUE(contains_text(actions, "cardiac doctor --json")) << actions;
  EXPECT_TRUE(contains_text(actions, "Reinstall")) << actions;
}

TEST(UplinkFlood, BelowSaturationItIsAWarning) {
  auto in = with_talkers({talker(7, "bob", "exfil", 0.3 * kLinkBytesPerS, 0, 25),
                          talker(8, "alice", "train", 0.05 * kLinkBytesPerS, 0, 1)},
                         35);
  auto f = flood(in);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

TEST(UplinkFlood, FewRemotesSmallRatesOrSharedUplinksAreNotAFlood) {
  // A checkpoint upload: most of the uplink, but to 3 storage servers.
  EXPECT_TRUE(
      flood(with_talkers({talker(1, "a", "s3 cp", 0.9 * kLinkBytesPerS, 0, 3)}, 92)).empty());
  // Many remotes but a trickle: under 20 % of the link.
  EXPECT_TRUE(flood(with_talkers({talker(1, "a", "p2p", 0.1 * kLinkBytesPerS, 0, 300)})).empty());
  // Two processes sharing the uplink evenly: neither sends more than half.
  EXPECT_TRUE(flood(with_talkers({talker(1, "a", "x", 0.4 * kLinkBytesPerS, 0, 50),
                                  talker(2, "b", "y", 0.4 * kLinkBytesPerS, 0, 50)}))
                  .empty());
  // No traffic measured (offline): nothing.
  DoctorInput offline;
  EXPECT_TRUE(flood(offline).empty());
}

TEST(UplinkFlood, WithoutALinkSpeedAnAbsoluteFloorApplies) {
  auto t = talker(9, "c", "flood", 50e6, 0, 40);  // 400 Mb/s
  t.sent_link_percent.reset();
  auto in = with_talkers({t});
  in.traffic->link.speed_mbps.reset();
  ASSERT_EQ(flood(in).size(), 1U);
  auto slow = talker(9, "c", "flood", 1e6, 0, 40);  // 8 Mb/s
  slow.sent_link_percent.reset();
  auto quiet = with_talkers({slow});
  quiet.traffic->link.speed_mbps.reset();
  EXPECT_TRUE(flood(quiet).empty());
}

std::vector<Finding> saturated(const DoctorInput& in) {
  std::vector<Finding> out;
  check_network(in, out);
  std::vector<Finding> sat;
  std::copy_if(out.begin(), out.end(), std::back_inserter(sat),
               [](const Finding& f) { return f.id == "network.nic_saturated"; });
  return sat;
}

TEST(NicSaturated, NamesTheTopTalkersAsProcessEvidence) {
  auto in =
      with_talkers({talker(300, "alice", "rsync -a /data backup:/", 0.7 * kLinkBytesPerS, 1e5, 1),
                    talker(301, "bob", "python serve.py", 0.2 * kLinkBytesPerS, 1e7, 40),
                    talker(302, "carol", "idle-reader", 0, 5e8, 1)},
                   94);
  auto f = saturated(in);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_TRUE(contains_text(f[0].explanation,
                            "By whom (sending over the window): pid 300 (alice) "
                            "rsync -a /data backup:/"))
      << f[0].explanation;
  std::vector<const Evidence*> procs;
  for (const auto& e : f[0].evidence) {
    if (e.kind == "process") procs.push_back(&e);
  }
  // The transmit side is saturated: the senders, busiest first; carol sent nothing.
  ASSERT_EQ(procs.size(), 2U);
  EXPECT_TRUE(contains_text(procs[0]->text, "pid 300 (alice)")) << procs[0]->text;
  EXPECT_TRUE(contains_text(procs[0]->text, "70 % of eth0")) << procs[0]->text;
  EXPECT_TRUE(contains_text(procs[1]->text, "pid 301 (bob) python serve.py")) << procs[1]->text;
  EXPECT_TRUE(contains_text(procs[1]->text, "40 remotes")) << procs[1]->text;
  EXPECT_TRUE(contains_text(f[0].actions[0], "cardiac net top")) << f[0].actions[0];
}

TEST(NicSaturated, WithoutTrafficItSaysOnlyWhat) {
  auto in = with_talkers({}, 94);
  in.traffic.reset();
  auto f = saturated(in);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_FALSE(contains_text(f[0].explanation, "By whom"));
  EXPECT_TRUE(std::none_of(f[0].evidence.begin(), f[0].evidence.end(),
                           [](const Evidence& e) { return e.kind == "process"; }));
}

TEST(TrafficReport, JsonAndTextShowTheTopTalkers) {
  auto in = with_talkers({talker(300, "alice", "rsync -a /data", 1e8, 1e5, 2)});
  Report r = diagnose(in);
  ASSERT_TRUE(r.traffic);
  auto j = to_json(r);
  ASSERT_TRUE(j.contains("traffic"));
  EXPECT_EQ(j["traffic"]["talkers"][0]["pid"], 300);
  EXPECT_EQ(j["traffic"]["talkers"][0]["user"], "alice");
  EXPECT_EQ(j["traffic"]["link"]["name"], "eth0");
  auto text = render_text(r, false);
  EXPECT_TRUE(
      contains_text(text, "talker: pid 300 (alice) rsync -a /data: sent 800 Mb/s (8 % of eth0)"))
      << text;
  r.traffic.reset();
  EXPECT_TRUE(to_json(r)["traffic"].is_null());
}

}  // namespace
}  // namespace cardiac::doctor
