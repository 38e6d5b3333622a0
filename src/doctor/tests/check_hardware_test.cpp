// SPDX-License-Identifier: Apache-2.0
// check_gpu_hardware on the recorded fake-NVML scenarios (replayed through their timelines)
// and on hand-built readings: each case names the finding id, category, severity and the
// first action it expects.
#include <gtest/gtest.h>

#include "doctor/tests/support.h"
#include "health/verdict.h"
#include "rules/defaults.h"
#include "rules/engine.h"

namespace cardiac::doctor {
namespace {

using namespace hw_test;

TEST(CheckHardware, HealthyNodeHasNoFindings) {
  auto in = scenario_input("healthy-8xh100.json", {0, 5, 10});
  in.host_samples.push_back(hgx_host());
  auto out = run(in);
  EXPECT_TRUE(out.empty()) << ids(out);
}

TEST(CheckHardware, ThermalThrottleSustainedIsAWarning) {
  // Throttling at 88 °C is slow, not broken: a warning, as status and the alerts say.
  auto in = scenario_input("thermal-throttle.json", {0, 5, 10});
  auto out = run(in);
  const Finding* f = find(out, "gpu.thermal.slowdown", 1);
  expect_finding(f, Category::kHardware, Severity::kWarning, "Check the airflow through GPU 1");
  EXPECT_EQ(f->gpu.serial, "1654922001251");
  EXPECT_NE(f->explanation.find("3 of 3 samples"), std::string::npos) << f->explanation;
  // The chart: the temperature over the window against the slowdown threshold.
  const Evidence* chart = nullptr;
  for (const auto& e : f->evidence) {
    if (!e.series.empty()) chart = &e;
  }
  ASSERT_NE(chart, nullptr);
  EXPECT_EQ(chart->metric, "temperature");
  EXPECT_EQ(chart->unit, "°C");
  EXPECT_EQ(chart->threshold, 87.0);
  ASSERT_EQ(chart->series.size(), 3U);
  EXPECT_EQ(chart->series.front().second, 88.0);
  EXPECT_EQ(chart->series.front().first, kT0);
  // The room test: the other GPUs are cool.
  EXPECT_NE(f->explanation.find("the other GPUs are at"), std::string::npos);
  // Room temperature is among the actions, and the cross-check comes last.
  ASSERT_GE(f->actions.size(), 3U);
  EXPECT_NE(f->actions[1].find("16–25 °C"), std::string::npos);
  EXPECT_NE(f->actions.back().find("cross-check"), std::string::npos);
  // No other GPU is called hot.
  for (const auto& x : out) EXPECT_EQ(x.gpu.index, 1U) << x.id;
}

TEST(CheckHardware, ThermalThrottleThatEasesIsAWarning) {
  // At 0 s throttled at 88 °C; by 600 s back to 70 °C with no reasons.
  auto out = run(scenario_input("thermal-throttle.json", {0, 600}));
  expect_finding(find(out, "gpu.thermal.slowdown", 1), Category::kHardware, Severity::kWarning,
                 "Check the airflow");
}

TEST(CheckHardware, NearShutdownIsCritical) {
  auto r = healthy(0);
  r.temperature = 91;
  r.clock_event_reasons = nvml::kReasonHwThermalSlowdown;
  auto out = run(window({{r}}));
  expect_finding(find(out, "gpu.thermal.near_shutdown", 0), Category::kHardware,
                 Severity::kCritical, "Check the airflow");
  EXPECT_EQ(find(out, "gpu.thermal.slowdown", 0), nullptr) << "one thermal finding per GPU";
}

// The status verdict and the doctor judge one reading with the same thresholds.
TEST(CheckHardware, ThermalAgreesWithStatusVerdict) {
  for (unsigned temp = 70; temp <= 95; ++temp) {
    auto r = healthy(0);
    r.temperature = temp;
    auto v = health::judge_gpu(r);
    auto out = run(window({{r}}));
    bool status_warn = false;
    bool status_fail = false;
    for (const auto& reason : v.reasons) {
      status_warn = status_warn || reason.code == "near_slowdown_temperature";
      status_fail = status_fail || reason.code == "near_shutdown_temperature";
    }
    const Finding* thermal = nullptr;
    for (const auto& f : out) {
      if (f.id.starts_with("gpu.thermal.")) thermal = &f;
    }
    SCOPED_TRACE(fmt::format("{} °C", temp));
    if (status_fail) {
      ASSERT_NE(thermal, nullptr);
      EXPECT_EQ(thermal->severity, Severity::kCritical);
    } else if (status_warn) {
      ASSERT_NE(thermal, nullptr);
      EXPECT_EQ(thermal->severity, Severity::kWarning);
    } else {
      EXPECT_EQ(thermal, nullptr) << thermal->id;
    }
  }
}

// docs/severity.md: one reading gets one severity from status, the alert rules and the doctor.
TEST(CheckHardware, EightyEightDegreesHasOneSeverityEverywhere) {
  for (bool throttling : {false, true}) {
    SCOPED_TRACE(throttling ? "throttling" : "not throttling");
    auto r = healthy(0);
    r.temperature = 88;  // slowdown 87, shutdown 92 on this board
    ASSERT_EQ(r.temperature_slowdown, 87u);
    ASSERT_EQ(r.temperature_shutdown, 92u);
    if (throttling) r.clock_event_reasons = nvml::kReasonHwThermalSlowdown;
    const Severity status = health::severity_of(health::judge_gpu(r).level);
    EXPECT_EQ(status, Severity::kWarning);

    auto out = run(window({{r}, {r}, {r}}));
    Severity doctor = Severity::kInfo;
    for (const auto& f : out) {
      if (f.id.starts_with("gpu.thermal.")) doctor = std::max(doctor, f.severity);
    }
    EXPECT_EQ(doctor, status);

    auto defaults = rules::default_rules();
    ASSERT_TRUE(defaults) << defaults.error().what();
    rules::RuleEngine engine(*defaults);
    nvml::GpuSnapshot gpus;
    gpus.available = true;
    gpus.gpus.push_back(r);
    Severity alert = Severity::kInfo;
    for (int s = 0; s <= 120; s += 10) {
      const TimeNs at = kT0 + s * kNsPerSec;
      for (const auto& t : engine.evaluate(rules::build_sample_view(gpus, {}, nullptr, at), at)) {
        if (t.to == rules::AlertState::kFiring) alert = std::max(alert, t.severity);
      }
    }
    EXPECT_EQ(alert, status);
  }
  EXPECT_EQ(health::level_name(health::level_of(Severity::kCritical)), "FAIL");
  EXPECT_EQ(health::level_name(health::level_of(Severity::kWarning)), "WARN");
  EXPECT_EQ(health::level_name(health::level_of(Severity::kInfo)), "OK");
}

TEST(CheckHardware, FanAtFullSpeedOnACoolGpuIsInfo) {
  auto r = healthy(0);
  r.fan_speed = 100;
  auto out = run(window({{r}}));
  const Finding* f = find(out, "gpu.fan.max", 0);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
}

TEST(CheckHardware, EccDbeScenario) {
  auto out = run(scenario_input("ecc-dbe.json", {0, 5}));
  const Finding* f = find(out, "gpu.ecc.dbe", 2);
  expect_finding(f, Category::kHardware, Severity::kCritical, "Stop the work on GPU 2");
  EXPECT_EQ(f->confidence, Confidence::kHigh);
  EXPECT_NE(f->actions.front().find("nvidia-smi -r -i 0000:3a:00.0"), std::string::npos)
      << f->actions.front();
  expect_finding(find(out, "gpu.row_remap.pending", 2), Category::kHardware, Severity::kWarning,
                 "When its job ends, reset it");
  EXPECT_EQ(find(out, "gpu.ecc.dbe", 0), nullptr);
}

TEST(CheckHardware, AggregateDbeRisingDuringTheWindowIsCritical) {
  auto a = healthy(0);
  auto b = a;
  b.ecc_aggregate_uncorrected = 1;  // volatile not read back yet: the aggregate moved
  auto out = run(window({{a}, {b}}));
  expect_finding(find(out, "gpu.ecc.dbe", 0), Category::kHardware, Severity::kCritical,
                 "Stop the work");
}

TEST(CheckHardware, PastDbeOnlyIsAWarning) {
  auto r = healthy(0);
  r.ecc_aggregate_uncorrected = 3;
  auto out = run(window({{r}, {r}}));
  EXPECT_EQ(find(out, "gpu.ecc.dbe"), nullptr);
  expect_finding(find(out, "gpu.ecc.dbe_past", 0), Category::kHardware, Severity::kWarning,
                 "Check the memory repair state");
}

TEST(CheckHardware, CorrectedErrorsRisingWarn) {
  auto a = healthy(0);
  auto b = a;
  a.ecc_volatile_corrected = 10;
  b.ecc_volatile_corrected = 14;
  auto out = run(window({{a}, {b}}));
  expect_finding(find(out, "gpu.ecc.sbe_rate", 0), Category::kHardware, Severity::kWarning,
                 "Keep it in service");
  // Steady and low: nothing.
  EXPECT_EQ(find(run(window({{a}, {a}})), "gpu.ecc.sbe_rate"), nullptr);
}

TEST(CheckHardware, RowRemapFailureAndManyUncorrectableRemaps) {
  auto r = healthy(0);
  r.remapped_rows_failure = true;
  r.remapped_rows_uncorrected = 512;
  r.remapped_rows_corrected = 3;
  auto out = run(window({{r}}));
  expect_finding(find(out, "gpu.row_remap.failed", 0), Category::kHardware, Severity::kCritical,
                 "Take GPU 0 (0000:18:00.0, serial 1654922001200) out of service and RMA it");
  expect_finding(find(out, "gpu.row_remap.uncorrectable", 0), Category::kHardware,
                 Severity::kWarning, "Plan to replace the GPU");
  r.remapped_rows_uncorrected = 511;
  EXPECT_EQ(find(run(window({{r}})), "gpu.row_remap.uncorrectable"), nullptr);
}

TEST(CheckHardware, RetiredPagesFollowDcgm) {
  auto r = healthy(0);
  r.retired_pages_sbe = 50;
  r.retired_pages_dbe = 13;
  auto out = run(window({{r}}));
  expect_finding(find(out, "gpu.retired_pages.limit", 0), Category::kHardware, Severity::kCritical,
                 "Take GPU 0");

  // Over the DBE soft limit with no history: a warning that says why it cannot judge.
  r.retired_pages_sbe = 0;
  r.retired_pages_dbe = 16;
  r.retired_pages_pending = true;
  auto in = window({{r}});
  out = run(in);
  const Finding* f = find(out, "gpu.retired_pages.dbe", 0);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->explanation.find("week of history"), std::string::npos);
  expect_finding(find(out, "gpu.retired_pages.pending", 0), Category::kHardware, Severity::kWarning,
                 "When its job ends, reset it");

  // With a week of history showing 10 a week ago: six new, so DCGM fails it.
  GpuHistory h;
  h.gpu = 0;
  h.uuid = r.uuid;
  h.series.push_back({"retired_pages_dbe",
                      {{in.now - 8 * 24 * 3600 * kNsPerSec, 10.0}, {in.now - kNsPerSec, 16.0}}});
  in.history.push_back(h);
  out = run(in);
  f = find(out, "gpu.retired_pages.dbe", 0);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NE(f->explanation.find("6 new in the last week"), std::string::npos) << f->explanation;
}

TEST(CheckHardware, GpuLostScenarioNamesTheSlot) {
  auto in = scenario_input("gpu-lost.json", {0, 5});
  in.host_samples.push_back(hgx_host());
  auto out = run(in);
  const Finding* f = find(out, "gpu.lost", 5);
  expect_finding(f, Category::kHardware, Severity::kCritical, "Drain the machine and reboot it");
  // NVML no longer tells the lost GPU's bus id; the one unclaimed GPU on the bus is it.
  EXPECT_EQ(f->gpu.pci_bus_id, "0000:ab:00.0");
  EXPECT_EQ(find(out, "gpu.missing_from_nvml"), nullptr) << ids(out);
  EXPECT_EQ(out.size(), 1U) << ids(out);
}

TEST(CheckHardware, GpuLostMidWindowSaysSo) {
  auto a = healthy(3);
  nvml::GpuReading b;
  b.index = 3;
  b.health = nvml::DeviceHealth::kLost;
  b.health_detail = "nvmlDeviceGetTemperature returned GPU_IS_LOST";
  auto out = run(window({{a}, {b}}));
  const Finding* f = find(out, "gpu.lost", 3);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->gpu.serial, a.serial) << "identity from the reading before the loss";
  EXPECT_NE(f->explanation.find("failed while cardiac watched"), std::string::npos);
}

TEST(CheckHardware, ResetRequiredScenario) {
  auto out = run(scenario_input("reset-required.json", {0}));
  expect_finding(find(out, "gpu.reset_required", 3), Category::kHardware, Severity::kCritical,
                 "Stop the processes using GPU 3");
}

TEST(CheckHardware, NvmlErrorIsAWarning) {
  auto r = healthy(1);
  r.health = nvml::DeviceHealth::kError;
  r.health_detail = "nvmlDeviceGetPowerUsage returned UNKNOWN";
  auto out = run(window({{r}}));
  expect_finding(find(out, "gpu.nvml_error", 1), Category::kHardware, Severity::kWarning,
                 "Check the kernel log");
}

TEST(CheckHardware, UnresponsiveGpuIsLeftToTheDriverCheck) {
  nvml::GpuReading r;
  r.index = 3;
  r.health = nvml::DeviceHealth::kUnresponsive;
  r.health_detail = "nvmlDeviceGetTemperature did not return within 5.0 s";
  EXPECT_TRUE(run(window({{r}})).empty());
}

}  // namespace
}  // namespace cardiac::doctor
