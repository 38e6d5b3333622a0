// SPDX-License-Identifier: Apache-2.0
// Counter rules over kernel-log faults: increase()/rate() spelling, gpu_xid_errors_total, one
// alert per (GPU, fault class) with its count, and the default rule of every fault class.
#include "health/faults.h"
#include "rules/defaults.h"
#include "rules/engine.h"
#include "rules/tests/support.h"

namespace cardiac::rules {
namespace {

using testing::at_s;
using testing::rules_from;

TEST(FaultRules, PromqlSpellingOfCounterRules) {
  auto rules = rules_from(R"toml(
[[rule]]
name = "xids"
metric = "increase(gpu_xid_errors_total[10m])"
op = ">"
threshold = 0
severity = "critical"

[[rule]]
name = "replays"
metric = "rate(gpu_pcie_replay_counter[5m])"
op = ">"
threshold = 1
)toml");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].kind, RuleKind::kIncrease);
  EXPECT_EQ(rules[0].metric, "gpu_xid_errors_total");
  EXPECT_EQ(rules[0].window_ns, 600 * kNsPerSec);
  EXPECT_EQ(rules[1].kind, RuleKind::kRate);
  EXPECT_EQ(rules[1].metric, "gpu_pcie_replay_counter");
  EXPECT_EQ(rules[1].window_ns, 300 * kNsPerSec);
  EXPECT_EQ(rules[1].per_ns, kNsPerSec);  // rate() is per second, as in PromQL
  for (const auto& r : rules) EXPECT_TRUE(validate_rule(r)) << r.name;

  auto bad = parse_rules(
      "[[rule]]\nname = \"a\"\nmetric = \"increase(gpu_xid_errors_total)\"\n"
      "op = \">\"\nthreshold = 0\n",
      "rules.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("needs a window"), std::string::npos) << bad.error().what();
  bad = parse_rules(
      "[[rule]]\nname = \"a\"\nkind = \"rate\"\n"
      "metric = \"increase(gpu_xid_errors_total[5m])\"\nop = \">\"\nthreshold = 0\n",
      "rules.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("rules.toml:"), std::string::npos) << bad.error().what();
}

TEST(FaultRules, XidCounterIsARuleMetric) {
  auto rules = rules_from(R"(
[[rule]]
name = "xid79"
kind = "increase"
metric = "gpu_xid_errors_total"
op = ">"
threshold = 0
window = "10m"
description = "GPU {gpu}: Xid {xid} {value} times"
)");
  RuleEngine e(rules);
  EXPECT_TRUE(e.take_errors().empty());
  nvml::GpuSnapshot gpus;
  gpus.available = true;
  gpus.gpus.push_back(testing::healthy_gpu(0));
  gpus.gpus[0].pci_bus_id = "00000000:3B:00.0";
  health::XidCounts xids;
  EXPECT_TRUE(
      e.evaluate(build_sample_view(gpus, {}, nullptr, at_s(0), {&xids, nullptr}), at_s(0)).empty());
  // The GPU's first Xid creates the series with 1: that is an increase from nothing.
  xids[{"0000:3b:00.0", 79}] = 1;
  auto t = e.evaluate(build_sample_view(gpus, {}, nullptr, at_s(10), {&xids, nullptr}), at_s(10));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  EXPECT_EQ(t[0].labels.at("gpu"), "0");
  EXPECT_EQ(t[0].labels.at("uuid"), "GPU-0");
  EXPECT_EQ(t[0].labels.at("xid"), "79");
  EXPECT_EQ(t[0].labels.at("pci_bus_id"), "0000:3b:00.0");
  EXPECT_EQ(t[0].description, "GPU 0: Xid 79 1 times");
}

TEST(FaultRules, ThousandsOfLinesAreOneAlertWithTheirCount) {
  RuleEngine e(rules_from(R"toml(
[[rule]]
name = "fell"
metric = "increase(gpu_fault_fallen_off_bus_total[1h])"
op = ">"
threshold = 0
)toml"));
  nvml::GpuSnapshot gpus;
  gpus.available = true;
  gpus.gpus.push_back(testing::healthy_gpu(0));
  gpus.gpus[0].pci_bus_id = "0000:3b:00.0";
  health::FaultCounts counts;
  std::vector<Transition> all;
  std::uint64_t total = 0;
  for (int s = 0; s < 600; s += 10) {
    // 3,000 lines of the same fault, spread over the samples the way a log burst arrives.
    if (s >= 10 && s < 310) {
      total += 100;
      counts[{"0000:3b:00.0", health::FaultClass::kFallenOffBus}] = total;
    }
    for (auto& t :
         e.evaluate(build_sample_view(gpus, {}, nullptr, at_s(s), {nullptr, &counts}), at_s(s))) {
      all.push_back(std::move(t));
    }
  }
  ASSERT_EQ(total, 3000u);
  std::size_t fired = 0;
  for (const auto& t : all) {
    if (t.to == AlertState::kFiring && t.from != AlertState::kFiring) ++fired;
    EXPECT_EQ(t.labels.at("gpu"), "0");
  }
  EXPECT_EQ(fired, 1u);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back().to, AlertState::kFiring);
  EXPECT_EQ(all.back().value, 3000);  // every occurrence counted, on the one alert
}

TEST(FaultRules, EveryFaultClassHasADefaultRuleThatFires) {
  auto rules = default_rules();
  ASSERT_TRUE(rules) << rules.error().what();
  for (const auto& c : health::fault_classes()) {
    const Rule* rule = nullptr;
    for (const auto& r : *rules) {
      if (r.metric == c.rule_metric) rule = &r;
    }
    ASSERT_NE(rule, nullptr) << c.name;
    EXPECT_EQ(rule->kind, RuleKind::kIncrease) << c.name;
    EXPECT_EQ(rule->severity, c.severity) << c.name;

    RuleEngine e({*rule});
    nvml::GpuSnapshot gpus;
    gpus.available = true;
    gpus.gpus.push_back(testing::healthy_gpu(0));
    gpus.gpus[0].pci_bus_id = "0000:3b:00.0";
    health::FaultCounts counts;
    EXPECT_TRUE(
        e.evaluate(build_sample_view(gpus, {}, nullptr, at_s(0), {nullptr, &counts}), at_s(0))
            .empty());
    counts[{"0000:3b:00.0", c.fault_class}] = 2;
    auto t =
        e.evaluate(build_sample_view(gpus, {}, nullptr, at_s(10), {nullptr, &counts}), at_s(10));
    ASSERT_EQ(t.size(), 1u) << c.name;
    EXPECT_EQ(t[0].to, AlertState::kFiring) << c.name;
    EXPECT_NE(t[0].description.find("2 "), std::string::npos) << t[0].description;
    EXPECT_EQ(t[0].description.find('{'), std::string::npos) << t[0].description;
  }
}

}  // namespace
}  // namespace cardiac::rules
