// SPDX-License-Identifier: Apache-2.0
// check_gpu_hardware on PCIe links, NVLink, power and the GPUs on the bus: each case names the
// finding id, category, severity and the first action it expects.
#include <gtest/gtest.h>

#include "doctor/tests/support.h"

namespace cardiac::doctor {
namespace {

using namespace hw_test;

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
