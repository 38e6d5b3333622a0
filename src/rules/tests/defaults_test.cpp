// SPDX-License-Identifier: Apache-2.0
// The built-in rules parse, validate, stay quiet on a healthy machine and fire on real faults.
#include "rules/defaults.h"

#include <set>

#include "nvml/types.h"
#include "rules/engine.h"
#include "rules/tests/support.h"

namespace cardiac::rules {
namespace {

using testing::at_s;
using testing::healthy_gpus;
using testing::healthy_host;
using testing::healthy_rates;

std::vector<Rule> defaults() {
  auto r = default_rules();
  EXPECT_TRUE(r) << (r ? "" : r.error().what());
  return r ? *r : std::vector<Rule>{};
}

// Runs the defaults on the same sample every `step_s` seconds for `total_s` and collects
// transitions.
std::vector<Transition> run(RuleEngine& e, const SampleView& v, int from_s, int total_s,
                            int step_s = 10) {
  std::vector<Transition> all;
  for (int s = from_s; s <= from_s + total_s; s += step_s) {
    for (auto& t : e.evaluate(v, at_s(s))) all.push_back(std::move(t));
  }
  return all;
}

const Transition* find(const std::vector<Transition>& ts, std::string_view rule, AlertState to) {
  for (const auto& t : ts) {
    if (t.rule == rule && t.to == to) return &t;
  }
  return nullptr;
}

TEST(Defaults, ParseAndValidate) {
  const auto rules = defaults();
  EXPECT_GE(rules.size(), 25u);
  std::set<std::string> metrics;
  for (const auto& r : rules) {
    EXPECT_TRUE(validate_rule(r)) << r.name << ": " << validate_rule(r).error().what();
    EXPECT_FALSE(r.description.empty()) << r.name;
    metrics.insert(r.metric);
  }
  for (const char* m :
       {"gpu_temperature", "gpu_clock_event_hw_thermal", "gpu_memory_used_pct",
        "gpu_utilization_gpu", "gpu_ecc_volatile_uncorrected", "gpu_pcie_replay_counter", "gpu_up",
        "host_cpu_busy_pct", "host_disk_used_pct", "host_nic_util_pct", "host_dstate_processes",
        "host_inlet_temperature_c"}) {
    EXPECT_TRUE(metrics.count(m)) << m;
  }
  RuleEngine e(rules);
  EXPECT_TRUE(e.take_errors().empty());
}

TEST(Defaults, HealthyMachineStaysQuietForAnHour) {
  RuleEngine e(defaults());
  const auto gpus = healthy_gpus(2);
  const auto host = healthy_host();
  const auto rates = healthy_rates();
  const auto ts = run(e, build_sample_view(gpus, host, &rates, 0), 0, 3600, 30);
  for (const auto& t : ts) ADD_FAILURE() << t.rule << " -> " << alert_state_name(t.to);
  EXPECT_TRUE(e.take_errors().empty());
}

TEST(Defaults, ThermalThrottleFiresAfterItsFor) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(2);
  gpus.gpus[1].clock_event_reasons = nvml::kReasonHwThermalSlowdown;
  const auto host = healthy_host();
  const SampleView v = build_sample_view(gpus, host, nullptr, 0);
  auto ts = run(e, v, 0, 50);
  EXPECT_TRUE(find(ts, "gpu_hw_thermal_slowdown", AlertState::kPending));
  EXPECT_FALSE(find(ts, "gpu_hw_thermal_slowdown", AlertState::kFiring));
  ts = run(e, v, 60, 0);
  const Transition* t = find(ts, "gpu_hw_thermal_slowdown", AlertState::kFiring);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->labels.at("gpu"), "1");
  EXPECT_EQ(t->at, at_s(60));
  EXPECT_NE(t->description.find("GPU 1: HW thermal slowdown"), std::string::npos);
}

TEST(Defaults, HotGpuNearThenAboveSlowdown) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(1);
  gpus.gpus[0].temperature = 86;
  const auto host = healthy_host();
  auto ts = run(e, build_sample_view(gpus, host, nullptr, 0), 0, 60);
  const Transition* near = find(ts, "gpu_temperature_near_slowdown", AlertState::kFiring);
  ASSERT_TRUE(near);
  EXPECT_EQ(near->description,
            "GPU 0 at 86 °C, within 5 °C of its slowdown threshold (alert at 85 °C)");
  EXPECT_FALSE(find(ts, "gpu_temperature_above_slowdown", AlertState::kFiring));
  gpus.gpus[0].temperature = 91;
  ts = run(e, build_sample_view(gpus, host, nullptr, 0), 70, 0);
  EXPECT_TRUE(find(ts, "gpu_temperature_above_slowdown", AlertState::kFiring));
}

TEST(Defaults, HardwareFaultsFireAtOnce) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(3);
  gpus.gpus[0].ecc_volatile_uncorrected = 1;
  gpus.gpus[1].remapped_rows_failure = true;
  gpus.gpus[2].health = nvml::DeviceHealth::kLost;
  const auto ts = e.evaluate(build_sample_view(gpus, healthy_host(), nullptr, 0), at_s(0));
  EXPECT_TRUE(find(ts, "gpu_ecc_uncorrected", AlertState::kFiring));
  EXPECT_TRUE(find(ts, "gpu_row_remap_failed", AlertState::kFiring));
  const Transition* lost = find(ts, "gpu_lost", AlertState::kFiring);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->severity, Severity::kCritical);
  EXPECT_EQ(lost->description, "GPU 2 (GPU-2) stopped answering NVML (lost, hung or erroring)");
}

TEST(Defaults, LostGpuThatAnswersAgainUnderItsUuidResolvesAtOnce) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(2);
  const std::string uuid = gpus.gpus[1].uuid;
  gpus.gpus[1].health = nvml::DeviceHealth::kLost;
  gpus.gpus[1].uuid.clear();  // lost since the agent started: never read
  auto ts = e.evaluate(build_sample_view(gpus, healthy_host(), nullptr, 0), at_s(0));
  ASSERT_TRUE(find(ts, "gpu_lost", AlertState::kFiring));
  gpus.gpus[1].health = nvml::DeviceHealth::kOk;
  gpus.gpus[1].uuid = uuid;
  ts = e.evaluate(build_sample_view(gpus, healthy_host(), nullptr, 0), at_s(10));
  const Transition* resolved = find(ts, "gpu_lost", AlertState::kResolved);
  ASSERT_TRUE(resolved) << "the recovered GPU's alert must end now, not after the stale gap";
  EXPECT_EQ(resolved->labels.at("gpu"), "1");
  // GPU 0's series was there all along and is not touched.
  EXPECT_EQ(ts.size(), 1U);
}

TEST(Defaults, LostGpuWhoseUuidCouldNotBeReadSaysSo) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(1);
  gpus.gpus[0].health = nvml::DeviceHealth::kLost;
  gpus.gpus[0].uuid.clear();
  const auto ts = e.evaluate(build_sample_view(gpus, healthy_host(), nullptr, 0), at_s(0));
  const Transition* lost = find(ts, "gpu_lost", AlertState::kFiring);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->description,
            "GPU 0 (uuid unknown) stopped answering NVML (lost, hung or erroring)");
}

TEST(Defaults, PcieReplayRateAboveGenerationAllowance) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(1);
  const auto host = healthy_host();
  gpus.gpus[0].pcie_replay_counter = 100;
  EXPECT_FALSE(find(e.evaluate(build_sample_view(gpus, host, nullptr, 0), at_s(0)),
                    "gpu_pcie_replay_rate", AlertState::kFiring));
  gpus.gpus[0].pcie_replay_counter = 116;  // Gen4 x16 allows 16 per minute: not above
  EXPECT_FALSE(find(e.evaluate(build_sample_view(gpus, host, nullptr, 0), at_s(60)),
                    "gpu_pcie_replay_rate", AlertState::kFiring));
  gpus.gpus[0].pcie_replay_counter = 133;
  EXPECT_TRUE(find(e.evaluate(build_sample_view(gpus, host, nullptr, 0), at_s(120)),
                   "gpu_pcie_replay_rate", AlertState::kFiring));
}

TEST(Defaults, AllocatedButIdleAndDegradedLink) {
  RuleEngine e(defaults());
  auto gpus = healthy_gpus(2);
  gpus.gpus[0].utilization_gpu = 3;     // held by a process, nearly idle
  gpus.gpus[1].pcie_width_current = 8;  // x8 under load
  const auto ts = run(e, build_sample_view(gpus, healthy_host(), nullptr, 0), 0, 1800, 60);
  const Transition* idle = find(ts, "gpu_allocated_but_idle", AlertState::kFiring);
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->at, at_s(1800));
  EXPECT_EQ(idle->labels.at("gpu"), "0");
  const Transition* link = find(ts, "gpu_pcie_width_degraded", AlertState::kFiring);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->labels.at("gpu"), "1");
  EXPECT_EQ(link->description,
            "GPU 1: PCIe link x8 under load, below its maximum x16 (reseat the card)");
}

TEST(Defaults, HostDiskFullFiresPerMount) {
  RuleEngine e(defaults());
  auto host = healthy_host();
  host::FilesystemUsage data;
  data.mount_point = "/data";
  data.total = 1000;
  data.free = 50;
  data.available = 50;
  host.filesystems.push_back(data);
  const auto ts = run(e, build_sample_view(nvml::GpuSnapshot{}, host, nullptr, 0), 0, 300);
  const Transition* t = find(ts, "host_disk_nearly_full", AlertState::kFiring);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->description, "/data is 95 % full");
}

// One stuck process must not read "1 processes stuck".
TEST(Defaults, StuckProcessCountReadsRightForOne) {
  RuleEngine e(defaults());
  auto host = healthy_host();
  host::DStateProcess stuck;
  stuck.pid = 42;
  stuck.comm = "nvidia-smi";
  host.dstate_processes.push_back(stuck);
  const auto ts = run(e, build_sample_view(nvml::GpuSnapshot{}, host, nullptr, 0), 0, 400);
  const Transition* t = find(ts, "host_dstate_processes", AlertState::kFiring);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->description, "processes stuck in D state for 5 minutes: 1");
}

}  // namespace
}  // namespace cardiac::rules

namespace cardiac::rules {
namespace {

TEST(Defaults, UnusableNvmlFiresCriticalAtOnceAndResolvesWhenItWorks) {
  RuleEngine e(defaults());
  nvml::GpuSnapshot none;
  none.available = false;
  none.error_kind = "driver_not_loaded";
  none.error = "the NVIDIA kernel module is not loaded";
  const auto host = testing::healthy_host();
  auto ts = run(e, build_sample_view(none, host, nullptr, at_s(0)), 0, 0);
  const Transition* t = find(ts, "nvml_unavailable", AlertState::kFiring);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->severity, Severity::kCritical);
  EXPECT_TRUE(t->labels.empty());
  ts = run(e, build_sample_view(testing::healthy_gpus(2), host, nullptr, at_s(10)), 10, 0);
  EXPECT_TRUE(find(ts, "nvml_unavailable", AlertState::kResolved));
}

TEST(Defaults, UnreadableKernelLogWarnsAfterAMinute) {
  RuleEngine e(defaults());
  const auto host = testing::healthy_host();
  auto sample = [&](double up, std::int64_t s) {
    auto v = build_sample_view(testing::healthy_gpus(2), host, nullptr, at_s(s));
    v.points.push_back({"kmsg_up", {}, up});
    return e.evaluate(v, at_s(s));
  };
  EXPECT_TRUE(find(sample(0, 0), "kmsg_unreadable", AlertState::kPending));
  const auto ts = sample(0, 60);
  const Transition* t = find(ts, "kmsg_unreadable", AlertState::kFiring);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->severity, Severity::kWarning);
  EXPECT_TRUE(find(sample(1, 70), "kmsg_unreadable", AlertState::kResolved));
}

}  // namespace
}  // namespace cardiac::rules
