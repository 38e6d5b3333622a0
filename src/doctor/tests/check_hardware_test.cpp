// SPDX-License-Identifier: Apache-2.0
// check_gpu_hardware on the recorded fake-NVML scenarios (replayed through their timelines)
// and on hand-built readings: each case names the finding id, category, severity and the
// first action it expects.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/format.h"
#include "doctor/checks.h"
#include "health/verdict.h"
#include "host/pci.h"
#include "nvml/gpu_json.h"
#include "nvml/pci.h"
#include "nvml/types.h"
#include "platform/fs.h"
#include "rules/defaults.h"
#include "rules/engine.h"

namespace cardiac::doctor {
namespace {

constexpr TimeNs kT0 = 1'764'000'000 * kNsPerSec;

nlohmann::json load_scenario(const std::string& name) {
  std::ifstream f(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/" + name);
  EXPECT_TRUE(f.good()) << name;
  return nlohmann::json::parse(f);
}

// What the collector would have read at `t_s` seconds into the scenario: the timeline applied
// up to then; a lost or reset-required device answers nothing but its state.
nvml::GpuSnapshot snapshot_at(const nlohmann::json& sc, double t_s) {
  std::vector<nlohmann::json> devices = sc.at("devices").get<std::vector<nlohmann::json>>();
  for (const auto& step : sc.value("timeline", nlohmann::json::array())) {
    if (step.at("at").get<double>() > t_s) continue;
    auto& dev = devices.at(step.at("device").get<std::size_t>());
    for (const auto& [key, value] : step.at("set").items()) {
      if (value.is_null()) {
        dev.erase(key);
      } else {
        dev[key] = value;
      }
    }
  }
  nvml::GpuSnapshot snap;
  snap.available = true;
  snap.taken_at = kT0 + static_cast<TimeNs>(t_s * 1e9);
  snap.system.driver_version = sc.value("driver_version", "");
  snap.system.device_count = static_cast<unsigned>(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    nlohmann::json dev = devices[i];
    std::string state = dev.value("state", "ok");
    nvml::GpuReading r;
    if (state == "ok") {
      dev.erase("state");
      dev["index"] = i;
      auto parsed = nvml::gpu_reading_from_json(dev);
      EXPECT_TRUE(parsed.has_value()) << parsed.error().what();
      r = *parsed;
      r.pci_bus_id = nvml::normalize_pci_bus_id(r.pci_bus_id);
    } else {
      r.index = static_cast<unsigned>(i);
      r.health = state == "lost" ? nvml::DeviceHealth::kLost : nvml::DeviceHealth::kResetRequired;
      r.health_detail = state == "lost" ? "nvmlDeviceGetUUID returned GPU_IS_LOST"
                                        : "nvmlDeviceGetUUID returned RESET_REQUIRED";
    }
    r.sampled_at = snap.taken_at;
    snap.gpus.push_back(std::move(r));
  }
  return snap;
}

DoctorInput scenario_input(const std::string& name, std::vector<double> times) {
  auto sc = load_scenario(name);
  DoctorInput in;
  for (double t : times) in.gpu_samples.push_back(snapshot_at(sc, t));
  in.now = in.gpu_samples.back().taken_at;
  return in;
}

// The 8-GPU HGX host tree: its PCI bus holds the scenarios' eight H100s.
host::HostSnapshot hgx_host() {
  host::HostSnapshot h;
  h.taken_at = kT0;
  RootFs fs(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x");
  auto pci = host::collect_nvidia_pci(fs);
  EXPECT_TRUE(pci.has_value());
  if (pci) h.pci = *pci;
  return h;
}

nvml::GpuReading healthy(unsigned index) {
  nvml::GpuReading r;
  r.index = index;
  r.name = "NVIDIA H100 80GB HBM3";
  r.uuid = fmt::format("GPU-0000000{}", index);
  r.serial = fmt::format("16549220012{:02}", index);
  r.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + index);
  r.persistence_mode = true;
  r.utilization_gpu = 97;
  r.temperature = 60;
  r.temperature_slowdown = 87;
  r.temperature_shutdown = 92;
  r.power_usage_mw = 650'000;
  r.power_limit_mw = 700'000;
  r.power_default_limit_mw = 700'000;
  r.clock_event_reasons = 0;
  r.ecc_volatile_corrected = 0;
  r.ecc_volatile_uncorrected = 0;
  r.ecc_aggregate_corrected = 0;
  r.ecc_aggregate_uncorrected = 0;
  r.pcie_gen_current = 5;
  r.pcie_gen_max = 5;
  r.pcie_width_current = 16;
  r.pcie_width_max = 16;
  r.pcie_replay_counter = 0;
  return r;
}

// One snapshot per reading set, `step_s` apart.
DoctorInput window(const std::vector<std::vector<nvml::GpuReading>>& samples, double step_s = 5) {
  DoctorInput in;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    nvml::GpuSnapshot s;
    s.available = true;
    s.taken_at = kT0 + static_cast<TimeNs>(static_cast<double>(i) * step_s * 1e9);
    s.system.device_count = static_cast<unsigned>(samples[i].size());
    s.gpus = samples[i];
    for (auto& g : s.gpus) g.sampled_at = s.taken_at;
    in.gpu_samples.push_back(std::move(s));
  }
  in.now = in.gpu_samples.back().taken_at;
  return in;
}

std::vector<Finding> run(const DoctorInput& in) {
  std::vector<Finding> out;
  check_gpu_hardware(in, out);
  return out;
}

const Finding* find(const std::vector<Finding>& fs, std::string_view id,
                    std::optional<unsigned> gpu = std::nullopt) {
  for (const auto& f : fs) {
    if (f.id == id && (!gpu || f.gpu.index == gpu)) return &f;
  }
  return nullptr;
}

std::string ids(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs) {
    s += f.id + (f.gpu.index ? fmt::format("@{}", *f.gpu.index) : std::string()) + " ";
  }
  return s;
}

void expect_finding(const Finding* f, Category c, Severity s, std::string_view first_action) {
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(category_name(f->category), category_name(c)) << f->id;
  EXPECT_EQ(severity_name(f->severity), severity_name(s)) << f->id;
  ASSERT_FALSE(f->actions.empty()) << f->id;
  EXPECT_TRUE(f->actions.front().starts_with(first_action)) << f->id << ": " << f->actions.front();
}

// --- Scenarios.

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

TEST(CheckHardware, PcieDegradedUnderLoadWithReplays) {
  auto in = scenario_input("pcie-degraded.json", {0, 60, 120});
  in.host_samples.push_back(hgx_host());
  auto out = run(in);
  const Finding* f = find(out, "gpu.pcie.degraded", 4);
  expect_finding(f, Category::kHardware, Severity::kWarning,
                 "Power the server off and reseat GPU 4");
  EXPECT_EQ(f->confidence, Confidence::kHigh);
  bool sysfs = false;
  for (const auto& e : f->evidence) sysfs = sysfs || e.text.starts_with("sysfs: link");
  EXPECT_TRUE(sysfs) << "the PCI scan's view of the link is evidence too";
  // 1200 → 3900 replays in 120 s on gen3 x8 (DCGM: 3.84 per minute).
  const Finding* r = find(out, "gpu.pcie.replays", 4);
  expect_finding(r, Category::kHardware, Severity::kWarning, "Power off and reseat GPU 4");
  EXPECT_NE(r->evidence.front().text.find("from 1200 to 3900"), std::string::npos)
      << r->evidence.front().text;
}

TEST(CheckHardware, PcieDownshiftWhileIdleIsLowConfidenceInfo) {
  auto r = healthy(2);
  r.utilization_gpu = 0;
  r.pcie_gen_current = 1;
  r.clock_event_reasons = nvml::kReasonGpuIdle;
  auto out = run(window({{r}, {r}}));
  const Finding* f = find(out, "gpu.pcie.degraded", 2);
  expect_finding(f, Category::kHardware, Severity::kInfo, "Rerun `cardiac doctor` while a job");
  EXPECT_EQ(f->confidence, Confidence::kLow);
}

TEST(CheckHardware, PcieReplaysWithinDcgmRateAreFine) {
  // Gen5 x16 allows 30.72 replays per minute.
  auto a = healthy(0);
  auto b = a;
  a.pcie_replay_counter = 100;
  b.pcie_replay_counter = 130;
  EXPECT_EQ(find(run(window({{a}, {b}}, 60)), "gpu.pcie.replays"), nullptr);
  b.pcie_replay_counter = 132;
  EXPECT_NE(find(run(window({{a}, {b}}, 60)), "gpu.pcie.replays"), nullptr);
}

TEST(CheckHardware, GpuOnTheBusMissingFromNvml) {
  auto in = scenario_input("healthy-8xh100.json", {0});
  auto& gpus = in.gpu_samples.back().gpus;
  gpus.erase(gpus.begin() + 6);  // 0000:ba:00.0
  in.gpu_samples.back().system.device_count = 7;
  in.host_samples.push_back(hgx_host());
  auto out = run(in);
  const Finding* f = find(out, "gpu.missing_from_nvml");
  expect_finding(f, Category::kHardware, Severity::kCritical,
                 "Read the kernel log for 0000:ba:00.0");
  EXPECT_EQ(f->gpu.pci_bus_id, "0000:ba:00.0");
  EXPECT_EQ(out.size(), 1U) << ids(out);

  // Handed to a VM through vfio-pci: not ours to drive, not missing.
  for (auto& d : in.host_samples.back().pci->gpus) {
    if (d.bus_id == "0000:ba:00.0") d.driver = "vfio-pci";
  }
  EXPECT_EQ(find(run(in), "gpu.missing_from_nvml"), nullptr);
}

TEST(CheckHardware, FewerGpusThanExpected) {
  auto in = scenario_input("healthy-8xh100.json", {0});
  in.config.expected_gpus = 8;
  EXPECT_EQ(find(run(in), "gpu.count_below_expected"), nullptr);
  auto& snap = in.gpu_samples.back();
  snap.gpus.pop_back();
  snap.system.device_count = 7;
  auto out = run(in);
  const Finding* f = find(out, "gpu.count_below_expected");
  expect_finding(f, Category::kHardware, Severity::kCritical, "Find the missing card");
  EXPECT_EQ(f->title, "7 GPU(s) found, 8 expected");

  // NVML unusable: counted on the PCI bus instead.
  DoctorInput bus_only;
  bus_only.config.expected_gpus = 10;
  nvml::GpuSnapshot none;
  none.error_kind = "driver_not_loaded";
  bus_only.gpu_samples.push_back(none);
  bus_only.host_samples.push_back(hgx_host());
  out = run(bus_only);
  f = find(out, "gpu.count_below_expected");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "8 GPU(s) found, 10 expected");
  EXPECT_EQ(f->confidence, Confidence::kMedium);
}

nvml::NvLink link(unsigned n, bool active, std::uint64_t replay, std::uint64_t crc) {
  nvml::NvLink l;
  l.link = n;
  l.active = active;
  l.replay_errors = replay;
  l.recovery_errors = 0;
  l.crc_flit_errors = crc;
  l.crc_data_errors = 0;
  return l;
}

TEST(CheckHardware, NvlinkErrorsFollowDcgmLimits) {
  auto a = healthy(0);
  a.nvlinks = {link(0, true, 0, 0), link(1, true, 0, 0)};
  auto b = a;
  b.nvlinks = {link(0, true, 0, 500), link(1, true, 0, 0)};  // 50 CRC/s over 10 s: fine
  EXPECT_EQ(find(run(window({{a}, {b}}, 10)), "gpu.nvlink.errors"), nullptr);

  b.nvlinks = {link(0, true, 0, 2000), link(1, true, 0, 0)};  // 200 CRC/s
  auto out = run(window({{a}, {b}}, 10));
  expect_finding(find(out, "gpu.nvlink.errors", 0), Category::kHardware, Severity::kCritical,
                 "Drain GPU 0");

  b.nvlinks = {link(0, true, 0, 0), link(1, true, 1, 0)};  // one replay: DCGM fails it
  out = run(window({{a}, {b}}, 10));
  const Finding* f = find(out, "gpu.nvlink.errors", 0);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->evidence.size(), 1U);
  EXPECT_EQ(f->evidence.front().text, "link 1: +1 replay, +0 recovery, +0 CRC");
}

TEST(CheckHardware, NvlinkDownWhileOthersAreUp) {
  auto r = healthy(0);
  r.nvlinks = {link(0, true, 0, 0), link(1, false, 0, 0), link(2, true, 0, 0)};
  auto out = run(window({{r}}));
  const Finding* f = find(out, "gpu.nvlink.down", 0);
  expect_finding(f, Category::kHardware, Severity::kWarning, "On NVSwitch systems");
  EXPECT_EQ(f->evidence.front().text, "inactive links: 1");
  // A PCIe part with every link inactive has no NVLink in use: nothing to say.
  r.nvlinks = {link(0, false, 0, 0), link(1, false, 0, 0)};
  EXPECT_EQ(find(run(window({{r}})), "gpu.nvlink.down"), nullptr);
}

TEST(CheckHardware, PowerBrakeLimitAndCap) {
  auto r = healthy(0);
  r.clock_event_reasons = nvml::kReasonHwSlowdown | nvml::kReasonHwPowerBrakeSlowdown;
  auto out = run(window({{r}}));
  expect_finding(find(out, "gpu.power.brake", 0), Category::kHardware, Severity::kWarning,
                 "Check the power supplies");
  EXPECT_EQ(find(out, "gpu.hw_slowdown"), nullptr) << "the brake names the slowdown's cause";
  // Braking through the whole window: critical.
  expect_finding(find(run(window({{r}, {r}})), "gpu.power.brake", 0), Category::kHardware,
                 Severity::kCritical, "Check the power supplies");

  r = healthy(0);
  r.power_limit_mw = 500'000;
  r.clock_event_reasons = nvml::kReasonSwPowerCap;
  out = run(window({{r}}));
  expect_finding(find(out, "gpu.power.limit_below_default", 0), Category::kConfiguration,
                 Severity::kWarning,
                 "Restore the default limit: `sudo nvidia-smi -i 0000:18:00.0 -pl 700`");
  expect_finding(find(out, "gpu.power.capped", 0), Category::kHardware, Severity::kWarning,
                 "Restore the default power limit");

  r.power_limit_mw = 700'000;
  out = run(window({{r}}));
  EXPECT_EQ(find(out, "gpu.power.limit_below_default"), nullptr);
  const Finding* cap = find(out, "gpu.power.capped", 0);
  ASSERT_NE(cap, nullptr);
  EXPECT_EQ(cap->severity, Severity::kInfo);
  // Capped while idle says nothing.
  r.utilization_gpu = 5;
  EXPECT_EQ(find(run(window({{r}})), "gpu.power.capped"), nullptr);
}

TEST(CheckHardware, UnexplainedHwSlowdown) {
  auto r = healthy(0);
  r.clock_event_reasons = nvml::kReasonHwSlowdown;
  expect_finding(find(run(window({{r}})), "gpu.hw_slowdown", 0), Category::kHardware,
                 Severity::kWarning, "Check the GPU's power cables");
}

}  // namespace
}  // namespace cardiac::doctor
