// SPDX-License-Identifier: Apache-2.0
// check_gpu_peers (gpu.fail_slow) on hand-built readings: a busy GPU whose SM clock lags its
// busy peers fires, with its clock, the peers' median and its throttle reasons; idle GPUs, a
// single GPU, GPUs all equally slow, a lag in one sample, another model and a lag the GPU
// explains with a thermal reason do not.
#include <gtest/gtest.h>

#include "doctor/tests/support.h"
#include "nvml/clock_events.h"

namespace cardiac::doctor {
namespace {

using namespace hw_test;

// `n` busy H100s at 1,980 MHz, `samples` samples 5 s apart; `tweak` changes GPU readings of
// sample i.
template <class Tweak>
DoctorInput node(unsigned n, unsigned samples, Tweak tweak) {
  std::vector<std::vector<nvml::GpuReading>> all;
  for (unsigned i = 0; i < samples; ++i) {
    std::vector<nvml::GpuReading> snap;
    for (unsigned g = 0; g < n; ++g) {
      nvml::GpuReading r = healthy(g);
      r.clock_sm_mhz = 1980;
      r.clock_sm_max_mhz = 1980;
      tweak(i, r);
      snap.push_back(r);
    }
    all.push_back(std::move(snap));
  }
  return window(all);
}

std::vector<Finding> peers(const DoctorInput& in) {
  std::vector<Finding> out;
  check_gpu_peers(in, out);
  return out;
}

// GPU 2 at 1,200 MHz and 420 W, reporting nothing.
void slow_gpu2(unsigned /*sample*/, nvml::GpuReading& r) {
  if (r.index == 2) {
    r.clock_sm_mhz = 1200;
    r.power_usage_mw = 420'000;
  }
}

TEST(CheckGpuPeers, AGpuLaggingItsBusyPeersIsAWarningNamingTheNumbers) {
  auto out = peers(node(8, 6, slow_gpu2));
  ASSERT_EQ(out.size(), 1u) << ids(out);
  const Finding* f = hw_test::find(out, "gpu.fail_slow", 2);
  expect_finding(f, Category::kHardware, Severity::kWarning, "Check the throttle reasons");
  EXPECT_NE(f->title.find("1200 MHz"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("1980 MHz"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("61 %"), std::string::npos) << f->title;
  // No reason reported: the cause is hidden, a failing card.
  EXPECT_NE(f->explanation.find("no throttle reason"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("failing card"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("6 of 6 samples"), std::string::npos) << f->explanation;
  // Evidence: its clock and the peers' median over the window, power beside them.
  ASSERT_GE(f->evidence.size(), 3u);
  EXPECT_EQ(f->evidence[0].metric, "clock_sm");
  EXPECT_EQ(f->evidence[0].series.size(), 6u);
  EXPECT_EQ(f->evidence[1].series.front().second, 1980);
  EXPECT_NE(f->evidence[2].text.find("420 W against the peers' 650 W"), std::string::npos)
      << f->evidence[2].text;
  std::string steps;
  for (const auto& a : f->actions) steps += a + "\n";
  for (const char* want : {"POWER", "TEMPERATURE,PCIE", "dcgmi diag", "swap", "cardiac fence"}) {
    EXPECT_NE(steps.find(want), std::string::npos) << want << "\n" << steps;
  }
}

TEST(CheckGpuPeers, TheReasonsItReportsAreNamed) {
  auto out = peers(node(4, 5, [](unsigned i, nvml::GpuReading& r) {
    slow_gpu2(i, r);
    if (r.index == 2) r.clock_event_reasons = nvml::kReasonSwPowerCap;
  }));
  const Finding* f = hw_test::find(out, "gpu.fail_slow", 2);
  ASSERT_NE(f, nullptr) << ids(out);
  const auto cap = nvml::decode_clock_event_reasons(nvml::kReasonSwPowerCap);
  ASSERT_EQ(cap.size(), 1u);
  EXPECT_NE(f->explanation.find(std::string(cap[0].text)), std::string::npos) << f->explanation;
  EXPECT_EQ(f->explanation.find("hidden"), std::string::npos) << f->explanation;
}

TEST(CheckGpuPeers, IdleGpusDoNotCount) {
  // Every GPU idle, one at a lower idle clock.
  auto idle = peers(node(8, 6, [](unsigned i, nvml::GpuReading& r) {
    slow_gpu2(i, r);
    r.utilization_gpu = 0;
  }));
  EXPECT_TRUE(idle.empty()) << ids(idle);
  // The slow one idle, its peers busy.
  auto one_idle = peers(node(8, 6, [](unsigned i, nvml::GpuReading& r) {
    slow_gpu2(i, r);
    if (r.index == 2) r.utilization_gpu = 10;
  }));
  EXPECT_TRUE(one_idle.empty()) << ids(one_idle);
  // The slow one busy, every peer idle: nothing to compare with.
  auto peers_idle = peers(node(8, 6, [](unsigned i, nvml::GpuReading& r) {
    slow_gpu2(i, r);
    if (r.index != 2) r.utilization_gpu = 0;
  }));
  EXPECT_TRUE(peers_idle.empty()) << ids(peers_idle);
}

TEST(CheckGpuPeers, ASingleGpuHasNoPeers) {
  auto out = peers(node(1, 6, [](unsigned, nvml::GpuReading& r) { r.clock_sm_mhz = 900; }));
  EXPECT_TRUE(out.empty()) << ids(out);
}

TEST(CheckGpuPeers, EveryGpuEquallySlowIsNotOneSlowGpu) {
  auto out = peers(node(8, 6, [](unsigned, nvml::GpuReading& r) { r.clock_sm_mhz = 1100; }));
  EXPECT_TRUE(out.empty()) << ids(out);
}

TEST(CheckGpuPeers, ALagInOneSampleIsAClockRampingNotACard) {
  auto out = peers(node(8, 6, [](unsigned i, nvml::GpuReading& r) {
    if (i == 3) slow_gpu2(i, r);
  }));
  EXPECT_TRUE(out.empty()) << ids(out);
  // Too short a window to say: two samples.
  auto short_window = peers(node(8, 2, slow_gpu2));
  EXPECT_TRUE(short_window.empty()) << ids(short_window);
}

TEST(CheckGpuPeers, OnlyGpusOfTheSameModelAreCompared) {
  auto out = peers(node(8, 6, [](unsigned, nvml::GpuReading& r) {
    if (r.index == 2) {
      r.name = "NVIDIA A100-SXM4-80GB";
      r.clock_sm_mhz = 1410;
    }
  }));
  EXPECT_TRUE(out.empty()) << ids(out);
}

TEST(CheckGpuPeers, ThrottledPeersAreNoYardstickAndAThermalLagIsTheThermalFinding) {
  // GPU 2 thermally throttled in every sample: gpu.thermal.slowdown says so, not this check.
  auto thermal = peers(node(8, 6, [](unsigned i, nvml::GpuReading& r) {
    slow_gpu2(i, r);
    if (r.index == 2) r.clock_event_reasons = nvml::kReasonHwThermalSlowdown;
  }));
  EXPECT_TRUE(thermal.empty()) << ids(thermal);
  // Every peer in HW slowdown: no peer to compare with.
  auto throttled = peers(node(4, 6, [](unsigned i, nvml::GpuReading& r) {
    slow_gpu2(i, r);
    if (r.index != 2) r.clock_event_reasons = nvml::kReasonHwSlowdown;
  }));
  EXPECT_TRUE(throttled.empty()) << ids(throttled);
}

// Through the whole doctor: the healthy and thermal scenarios stay as they were.
TEST(CheckGpuPeers, RecordedScenariosDoNotFire) {
  for (const char* name : {"healthy-8xh100.json", "thermal-throttle.json", "pcie-degraded.json"}) {
    auto in = scenario_input(name, {0, 5, 10, 300, 305, 310});
    auto out = peers(in);
    EXPECT_EQ(hw_test::find(out, "gpu.fail_slow"), nullptr) << name << ": " << ids(out);
  }
}

}  // namespace
}  // namespace cardiac::doctor
