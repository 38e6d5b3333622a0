// SPDX-License-Identifier: Apache-2.0
// State machine tests: for-duration, hysteresis, per-series state, rate, absence, broken rules.
#include "rules/engine.h"

#include "rules/tests/support.h"

namespace cardiac::rules {
namespace {

using testing::at_s;
using testing::gpu;
using testing::rules_from;
using testing::view;

constexpr std::string_view kHot = R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">"
threshold = 80
for = "5m"
description = "GPU {gpu} at {value} C"
)";

TEST(Engine, ThresholdFiresOnlyAfterFor) {
  RuleEngine e(rules_from(kHot));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(0));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].from, AlertState::kInactive);
  EXPECT_EQ(t[0].to, AlertState::kPending);
  for (int s = 60; s < 300; s += 60) {
    EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(s)).empty()) << s;
  }
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(299)).empty());
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 86}}), at_s(300));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].from, AlertState::kPending);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  EXPECT_EQ(t[0].at, at_s(300));
  EXPECT_EQ(t[0].value, 86);
  EXPECT_EQ(t[0].rule, "hot");
  EXPECT_EQ(t[0].severity, Severity::kWarning);
  EXPECT_EQ(t[0].description, "GPU 0 at 86 C");
  // Firing is reported once, not on every sample.
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 86}}), at_s(360)).empty());
  ASSERT_EQ(e.firing().size(), 1u);
  EXPECT_EQ(e.firing()[0].second, "gpu=0");
}

TEST(Engine, PendingIsNotWordedAsFiring) {
  RuleEngine e(rules_from(kHot));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(0));
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].to, AlertState::kPending);
  EXPECT_EQ(t[0].description, "pending, fires if it still holds after 5m: GPU 0 at 85 C");
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(300));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].description, "GPU 0 at 85 C");  // firing: the rule's own words
}

TEST(Engine, PendingThatClearsNeverFires) {
  RuleEngine e(rules_from(kHot));
  EXPECT_EQ(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(0)).size(), 1u);
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 70}}), at_s(120));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].from, AlertState::kPending);
  EXPECT_EQ(t[0].to, AlertState::kInactive);
  // Hot again: the `for` starts over rather than counting the earlier minutes.
  EXPECT_EQ(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(200))[0].to,
            AlertState::kPending);
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(400)).empty());
  EXPECT_EQ(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(500))[0].to,
            AlertState::kFiring);
}

TEST(Engine, HysteresisHoldsUntilClear) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">="
threshold = 90
clear = 85
)"));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 90}}), at_s(0));
  ASSERT_EQ(t.size(), 1u);  // for = 0: straight to firing
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 86}}), at_s(10)).empty());
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(20)).empty());
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 84}}), at_s(30));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].from, AlertState::kFiring);
  EXPECT_EQ(t[0].to, AlertState::kResolved);
  EXPECT_EQ(t[0].value, 84);
  // 88 is below the threshold: a resolved alert does not come back until 90 again.
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 88}}), at_s(40)).empty());
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 91}}), at_s(50));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].from, AlertState::kResolved);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
}

TEST(Engine, WithoutClearResolvesAsSoonAsConditionFails) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">="
threshold = 90
)"));
  e.evaluate(view({{"gpu_temperature", gpu(0), 90}}), at_s(0));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 89}}), at_s(10));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kResolved);
}

TEST(Engine, GpusAreIndependent) {
  RuleEngine e(rules_from(kHot));
  auto t =
      e.evaluate(view({{"gpu_temperature", gpu(0), 85}, {"gpu_temperature", gpu(1), 60}}), at_s(0));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].labels.at("gpu"), "0");
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 85}, {"gpu_temperature", gpu(1), 85}}),
                 at_s(200));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].labels.at("gpu"), "1");
  EXPECT_EQ(t[0].to, AlertState::kPending);
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 85}, {"gpu_temperature", gpu(1), 85}}),
                 at_s(300));
  ASSERT_EQ(t.size(), 1u);  // gpu 0 fires; gpu 1 has waited only 100 s
  EXPECT_EQ(t[0].labels.at("gpu"), "0");
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 60}, {"gpu_temperature", gpu(1), 85}}),
                 at_s(500));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(testing::count_to(t, AlertState::kFiring), 1u);
  EXPECT_EQ(testing::count_to(t, AlertState::kResolved), 1u);
}

TEST(Engine, RuleLabelsJoinTransitions) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">"
threshold = 80
severity = "critical"
labels = { team = "infra", gpu = "ignored" }
description = "{team}: GPU {gpu} over {threshold} ({rule}, {metric}) {nope}"
)"));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(3), 81.5}}), at_s(0));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].labels.at("team"), "infra");
  EXPECT_EQ(t[0].labels.at("gpu"), "3");  // the series' identity wins over a rule label
  EXPECT_EQ(t[0].severity, Severity::kCritical);
  EXPECT_EQ(t[0].description, "infra: GPU 3 over 80 (hot, gpu_temperature) {nope}");
}

TEST(Engine, ThresholdMetricWithOffsetUsesTheSameGpu) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "near"
metric = "gpu_temperature"
op = ">="
threshold_metric = "gpu_temperature_slowdown"
threshold_offset = -3
description = "{value} >= {threshold}"
)"));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 86},
                            {"gpu_temperature_slowdown", gpu(0), 90},
                            {"gpu_temperature", gpu(1), 86},
                            {"gpu_temperature_slowdown", gpu(1), 89}}),
                      at_s(0));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].labels.at("gpu"), "1");
  EXPECT_EQ(t[0].description, "86 >= 86");
  // No slowdown threshold reported: the series is not evaluated at all.
  RuleEngine e2(e.rules());
  EXPECT_TRUE(e2.evaluate(view({{"gpu_temperature", gpu(0), 120}}), at_s(0)).empty());
}

TEST(Engine, WhenGuardGatesTheCondition) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "idle"
metric = "gpu_utilization_gpu"
op = "<"
threshold = 10
when_metric = "gpu_process_count"
when_op = ">="
when_threshold = 1
)"));
  EXPECT_TRUE(
      e.evaluate(view({{"gpu_utilization_gpu", gpu(0), 0}, {"gpu_process_count", gpu(0), 0}}),
                 at_s(0))
          .empty());
  EXPECT_TRUE(e.evaluate(view({{"gpu_utilization_gpu", gpu(0), 0}}), at_s(10)).empty());
  auto t = e.evaluate(view({{"gpu_utilization_gpu", gpu(0), 2}, {"gpu_process_count", gpu(0), 1}}),
                      at_s(20));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  t = e.evaluate(view({{"gpu_utilization_gpu", gpu(0), 2}, {"gpu_process_count", gpu(0), 0}}),
                 at_s(30));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kResolved);
}

TEST(Engine, RateRuleHandlesCounterReset) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "sbe"
kind = "rate"
metric = "gpu_ecc_volatile_corrected"
op = ">"
threshold = 4
per = "1m"
window = "5m"
)"));
  auto at = [&](int s, double v) {
    return e.evaluate(view({{"gpu_ecc_volatile_corrected", gpu(0), v}}), at_s(s));
  };
  EXPECT_TRUE(at(0, 100).empty());
  EXPECT_TRUE(at(60, 110).empty());  // 10 over a 5-minute window = 2/min
  EXPECT_TRUE(at(120, 5).empty());   // reset (driver reload): +5, not -105
  auto t = at(180, 15);              // 10 + 5 + 10 = 25 per 5 min = 5/min
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  EXPECT_DOUBLE_EQ(t[0].value, 5.0);
  // Flat counter: once the increases leave the window the rate drops below 4/min.
  EXPECT_TRUE(at(240, 15).empty());
  EXPECT_TRUE(at(300, 15).empty());  // the window still holds 0..300
  t = at(400, 15);                   // only 120..400 remain: +10 per 5 min = 2/min
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kResolved);
  EXPECT_DOUBLE_EQ(t[0].value, 2.0);
}

TEST(Engine, RateRuleAgainstComputedLimit) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "replays"
kind = "rate"
metric = "gpu_pcie_replay_counter"
op = ">"
threshold_metric = "gpu_pcie_replay_limit_per_min"
description = "{value}/min > {threshold}"
)"));
  EXPECT_TRUE(e.evaluate(view({{"gpu_pcie_replay_counter", gpu(0), 0},
                               {"gpu_pcie_replay_limit_per_min", gpu(0), 16}}),
                         at_s(0))
                  .empty());
  EXPECT_TRUE(e.evaluate(view({{"gpu_pcie_replay_counter", gpu(0), 16},
                               {"gpu_pcie_replay_limit_per_min", gpu(0), 16}}),
                         at_s(60))
                  .empty());
  auto t = e.evaluate(view({{"gpu_pcie_replay_counter", gpu(0), 40},
                            {"gpu_pcie_replay_limit_per_min", gpu(0), 16}}),
                      at_s(120));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].description, "24/min > 16");
}

TEST(Engine, AbsenceFiresWhenSamplesStop) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "silent"
kind = "absence"
metric = "gpu_temperature"
for = "2m"
description = "GPU {gpu} silent for {value} s"
)"));
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 50}}), at_s(0)).empty());
  EXPECT_TRUE(e.evaluate(view({{"gpu_temperature", gpu(0), 50}}), at_s(60)).empty());
  EXPECT_TRUE(e.evaluate(view({}), at_s(120)).empty());
  auto t = e.evaluate(view({}), at_s(180));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  EXPECT_EQ(t[0].labels, gpu(0));
  EXPECT_EQ(t[0].description, "GPU 0 silent for 120 s");
  t = e.evaluate(view({{"gpu_temperature", gpu(0), 50}}), at_s(200));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kResolved);
}

TEST(Engine, AbsenceFiresWhenMetricNeverAppears) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "no_inlet"
kind = "absence"
metric = "host_inlet_temperature_c"
for = "10m"
)"));
  EXPECT_TRUE(e.evaluate(view({}), at_s(0)).empty());
  EXPECT_TRUE(e.evaluate(view({}), at_s(599)).empty());
  auto t = e.evaluate(view({}), at_s(600));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0].labels.empty());
}

TEST(Engine, AbsenceFiresWhenFewerGpusThanExpected) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "gpu_count"
kind = "absence"
expected_gpus = 8
for = "1m"
description = "only {value} of {threshold} GPUs"
)"));
  EXPECT_TRUE(e.evaluate(view({{"gpu_count", {}, 8}}), at_s(0)).empty());
  EXPECT_EQ(e.evaluate(view({{"gpu_count", {}, 7}}), at_s(10))[0].to, AlertState::kPending);
  auto t = e.evaluate(view({{"gpu_count", {}, 7}}), at_s(70));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kFiring);
  EXPECT_EQ(t[0].description, "only 7 of 8 GPUs");
}

TEST(Engine, ShortGapKeepsStateLongGapResolves) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">"
threshold = 80
)"));
  e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(0));
  EXPECT_TRUE(e.evaluate(view({}), at_s(60)).empty());  // one failed read is not recovery
  EXPECT_TRUE(e.evaluate(view({}), at_s(300)).empty());
  auto t = e.evaluate(view({}), at_s(301));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to, AlertState::kResolved);
  EXPECT_TRUE(e.firing().empty());
}

TEST(Engine, BrokenRuleDoesNotStopOthers) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "typo"
metric = "gpu_temprature"
op = ">"
threshold = 1

[[rule]]
name = "gauge_rate"
kind = "rate"
metric = "gpu_temperature"
op = ">"
threshold = 1

[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">"
threshold = 80
)"));
  auto t = e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(0));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rule, "hot");
  auto errors = e.take_errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].rule, "typo");
  EXPECT_NE(errors[0].error.what().find("unknown metric 'gpu_temprature'"), std::string::npos);
  EXPECT_NE(errors[0].error.what().find("test.toml:2:1"), std::string::npos);
  EXPECT_EQ(errors[1].rule, "gauge_rate");
  EXPECT_NE(errors[1].error.what().find("counter"), std::string::npos);
  e.evaluate(view({{"gpu_temperature", gpu(0), 85}}), at_s(10));
  EXPECT_TRUE(e.take_errors().empty());  // reported once
}

TEST(Engine, ScopeMismatchIsAnError) {
  RuleEngine e(rules_from(R"(
[[rule]]
name = "x"
metric = "gpu_temperature"
scope = "host"
op = ">"
threshold = 1
)"));
  ASSERT_EQ(e.take_errors().size(), 1u);
}

TEST(AlertStateName, EveryStateReadsBackAndOtherTextIsRefused) {
  for (AlertState st :
       {AlertState::kInactive, AlertState::kPending, AlertState::kFiring, AlertState::kResolved}) {
    EXPECT_EQ(parse_alert_state(alert_state_name(st)), st) << alert_state_name(st);
  }
  EXPECT_EQ(alert_state_name(AlertState::kFiring), "firing");
  EXPECT_EQ(parse_alert_state("Firing"), std::nullopt);
  EXPECT_EQ(parse_alert_state(""), std::nullopt);
}

}  // namespace
}  // namespace cardiac::rules
