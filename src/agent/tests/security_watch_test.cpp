// SPDX-License-Identifier: Apache-2.0
// The agent's security watch on captured host trees (tests/fixtures/hosts/sec-*): the signs of
// compromise become rule points once per interval, the default rules page on the critical ones,
// a sign that is gone resolves, and the store's ports keep a restart from calling them new.
#include "agent/security_watch.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "rules/defaults.h"
#include "rules/engine.h"
#include "rules/parse.h"

namespace cardiac::agent {
namespace {

constexpr TimeNs kT0 = 1'764'000'000 * kNsPerSec;
constexpr DurationNs kEvery = 60 * kNsPerSec;
constexpr DurationNs kSample = 5 * kNsPerSec;

std::shared_ptr<const FileSystem> fixture(std::string_view name) {
  return std::make_shared<RootFs>(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/" +
                                  std::string(name));
}

// GPU i held by pids[i], every GPU at `util` %.
nvml::GpuSnapshot gpus(const std::vector<std::uint32_t>& pids, unsigned util, TimeNs at) {
  nvml::GpuSnapshot snap;
  snap.available = true;
  snap.taken_at = at;
  for (unsigned i = 0; i < pids.size(); ++i) {
    nvml::GpuReading r;
    r.index = i;
    r.uuid = fmt::format("GPU-{}", i);
    r.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + i);
    r.health = nvml::DeviceHealth::kOk;
    r.utilization_gpu = util;
    r.sampled_at = at;
    nvml::GpuProcess p;
    p.pid = pids[i];
    p.type = "compute";
    r.processes.push_back(p);
    snap.gpus.push_back(std::move(r));
  }
  return snap;
}

// The sec-gpu-miner tree: pid 6001 mines (stratum, pool port), 6002 is an unknown python3,
// 6003 is Slurm job 123's, 6004 is an allowed transcoder.
const std::vector<std::uint32_t> kMinerPids = {6001, 6002, 6003, 6004};

SecurityWatchOptions options() {
  SecurityWatchOptions o;
  o.every = kEvery;
  o.doctor.allowed_gpu_commands = {"/opt/transcode/bin/*"};
  o.doctor.runbook_base = "/usr/share/doc/cardiac/runbooks";
  return o;
}

struct Watched {
  ManualClock clock{kT0};
  SecurityWatch watch;
  explicit Watched(std::string_view tree, SecurityWatchOptions o = options())
      : watch(std::move(o), fixture(tree), clock) {}
  // One sample: the points the evaluate stage would see.
  std::vector<rules::Point> sample(unsigned util,
                                   std::optional<std::vector<store::ListenPort>> ports = {}) {
    std::vector<rules::Point> out;
    watch.add(gpus(kMinerPids, util, clock.now()), HostView{}, ports, clock.now(), out);
    clock.advance(kSample);
    return out;
  }
};

const rules::Point* find(const std::vector<rules::Point>& points, std::string_view metric) {
  for (const auto& p : points) {
    if (p.metric == metric) return &p;
  }
  return nullptr;
}

std::string metrics(const std::vector<rules::Point>& points) {
  std::string s;
  for (const auto& p : points) s += fmt::format("{}={} ", p.metric, p.value);
  return s;
}

TEST(SecurityWatch, AMinerOnABusyGpuBecomesACriticalPointAfterAnInterval) {
  Watched w("sec-gpu-miner");
  // The first scan has one GPU sample: "busy for long" is not known yet.
  auto first = w.sample(98);
  EXPECT_EQ(find(first, "security_gpu_cryptojacking"), nullptr) << metrics(first);
  EXPECT_EQ(w.watch.scans(), 1U);
  std::vector<rules::Point> points;
  for (DurationNs t = kSample; t <= kEvery; t += kSample) points = w.sample(98);
  EXPECT_EQ(w.watch.scans(), 2U);
  const rules::Point* miner = find(points, "security_gpu_cryptojacking");
  ASSERT_NE(miner, nullptr) << metrics(points);
  EXPECT_EQ(miner->value, 3);  // critical
  EXPECT_EQ(miner->labels.at("finding"), "security.gpu_cryptojacking");
  EXPECT_NE(miner->labels.at("summary").find("pid 6001"), std::string::npos)
      << miner->labels.at("summary");
  EXPECT_EQ(miner->labels.at("runbook"),
            "/usr/share/doc/cardiac/runbooks/security.gpu_cryptojacking.md");
  const rules::Point* unknown = find(points, "security_unknown_gpu_process");
  ASSERT_NE(unknown, nullptr) << metrics(points);
  EXPECT_EQ(unknown->value, 2);  // warning
  // Between two scans every sample repeats the last scan's points, so its alerts hold.
  auto between = w.sample(98);
  EXPECT_EQ(w.watch.scans(), 2U);
  EXPECT_NE(find(between, "security_gpu_cryptojacking"), nullptr) << metrics(between);
}

TEST(SecurityWatch, ASignThatIsGoneAtTheNextScanGivesNoPoint) {
  Watched w("sec-gpu-miner");
  std::vector<rules::Point> points;
  for (DurationNs t = 0; t <= kEvery; t += kSample) points = w.sample(98);
  ASSERT_NE(find(points, "security_gpu_cryptojacking"), nullptr) << metrics(points);
  // The GPUs idle for a whole interval: the next scan finds no busy intruder.
  // For one interval the gone sign is told as 0, so that its alert resolves at once rather than
  // when its series goes stale; then it is left out.
  for (DurationNs t = kSample; t <= kEvery; t += kSample) points = w.sample(5);
  const rules::Point* gone = find(points, "security_gpu_cryptojacking");
  ASSERT_NE(gone, nullptr) << metrics(points);
  EXPECT_EQ(gone->value, 0);
  for (DurationNs t = kSample; t <= kEvery; t += kSample) points = w.sample(5);
  EXPECT_EQ(find(points, "security_gpu_cryptojacking"), nullptr) << metrics(points);
  EXPECT_EQ(find(points, "security_unknown_gpu_process"), nullptr) << metrics(points);
}

TEST(SecurityWatch, ASecondRootAccountIsCriticalAtTheFirstScan) {
  Watched w("sec-uid0");
  auto points = w.sample(0);
  const rules::Point* uid0 = find(points, "security_uid0_account");
  ASSERT_NE(uid0, nullptr) << metrics(points);
  EXPECT_EQ(uid0->value, 3);
  EXPECT_NE(uid0->labels.at("summary").find("toor"), std::string::npos);
}

// The ports the store saw before a restart are known; one first seen now is new.
TEST(SecurityWatch, TheStoresPortsKeepARestartFromCallingThemNew) {
  const TimeNs day = 86400 * kNsPerSec;
  std::vector<store::ListenPort> seen = {{"tcp", 22, kT0 - 30 * day, kT0 - kNsPerSec},
                                         {"udp", 53, kT0 - 30 * day, kT0 - kNsPerSec}};
  Watched known("sec-listen");
  seen.push_back({"tcp", 4444, kT0 - 30 * day, kT0 - kNsPerSec});
  known.watch.seed_ports(seen);
  auto points = known.sample(0, std::vector<store::ListenPort>{{"tcp", 4444, 0, 0}});
  EXPECT_EQ(find(points, "security_new_listening_port"), nullptr) << metrics(points);

  seen.pop_back();
  Watched fresh("sec-listen");
  fresh.watch.seed_ports(seen);
  points = fresh.sample(0, std::vector<store::ListenPort>{{"tcp", 4444, 0, 0}});
  const rules::Point* port = find(points, "security_new_listening_port");
  ASSERT_NE(port, nullptr) << metrics(points);
  EXPECT_EQ(port->labels.at("summary"), "New listening port: tcp/4444");
}

TEST(SecurityWatch, AZeroIntervalNeverScans) {
  SecurityWatchOptions o = options();
  o.every = 0;
  Watched w("sec-uid0", o);
  EXPECT_TRUE(w.sample(0).empty());
  EXPECT_EQ(w.watch.scans(), 0U);
}

// The default rules page on the critical signs: the points above fire critical alerts.
TEST(SecurityWatch, TheDefaultRulesFireOnTheCriticalSigns) {
  auto rules = rules::parse_rules(rules::default_rules_text(), "defaults");
  ASSERT_TRUE(rules) << rules.error().what();
  rules::RuleEngine engine(std::move(*rules));
  Watched w("sec-gpu-miner");
  std::vector<rules::Transition> fired;
  for (DurationNs t = 0; t <= kEvery; t += kSample) {
    rules::SampleView view;
    view.at = w.clock.now();
    view.points = w.sample(98);
    for (auto& tr : engine.evaluate(view, view.at)) {
      if (tr.to == rules::AlertState::kFiring) fired.push_back(std::move(tr));
    }
  }
  std::map<std::string, std::string> by_rule;
  for (const auto& tr : fired) by_rule[tr.rule] = rules::severity_name(tr.severity);
  EXPECT_EQ(by_rule["security_gpu_cryptojacking"], "critical");
  EXPECT_EQ(by_rule["security_unknown_gpu_process"], "warning");

  Watched root("sec-uid0");
  rules::SampleView view;
  view.at = root.clock.now();
  view.points = root.sample(0);
  bool uid0 = false;
  for (const auto& tr : engine.evaluate(view, view.at)) {
    if (tr.rule == "security_uid0_account" && tr.to == rules::AlertState::kFiring) {
      uid0 = true;
      EXPECT_EQ(rules::severity_name(tr.severity), "critical");
      EXPECT_NE(tr.description.find("toor"), std::string::npos) << tr.description;
      EXPECT_NE(tr.description.find("security.uid0_account.md"), std::string::npos)
          << tr.description;
    }
  }
  EXPECT_TRUE(uid0);
}

}  // namespace
}  // namespace cardiac::agent
