// SPDX-License-Identifier: Apache-2.0
// The drift check: this host's configuration against a baseline (src/baseline).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "baseline/baseline.h"
#include "doctor/checks/checks.h"
#include "doctor/tests/support.h"

namespace cardiac::doctor::hw_test {
namespace {

constexpr const char* kNode01 = CARDIAC_FIXTURES_DIR "/hosts/debian-gpu-8x";
constexpr const char* kNode02 = CARDIAC_FIXTURES_DIR "/hosts/gpu-node-02-drift";

std::vector<Finding> drift(DoctorInput& in, const baseline::Baseline& b) {
  in.baseline = b;
  in.baseline_file = "/etc/cardiac/baseline.json";
  std::vector<Finding> out;
  check_drift(in, out);
  return out;
}

TEST(CheckDrift, NoBaselineNoFindings) {
  DoctorInput in;
  in.fs = std::make_shared<RootFs>(kNode02);
  std::vector<Finding> out;
  check_drift(in, out);
  EXPECT_TRUE(out.empty());
}

TEST(CheckDrift, EveryDifferenceOfTheOtherHostWithItsRisk) {
  RootFs one(kNode01);
  auto base = baseline::capture(one, nullptr, kT0);
  DoctorInput in;
  in.now = kT0;
  in.fs = std::make_shared<RootFs>(kNode02);
  auto out = drift(in, base);
  EXPECT_EQ(ids(out), "drift.kernel_params drift.driver drift.kernel drift.library drift.library ");
  const Finding* d = find(out, "drift.driver");
  expect_finding(d, Category::kConfiguration, Severity::kCritical, "Install the baseline's driver");
  EXPECT_EQ(d->explanation.substr(0, 51), "driver 535.161.08 here, 550.54.15 in the baseline: ");
  EXPECT_EQ(d->title,
            "Driver differs from the baseline (taken on gpu-node-01): 535.161.08 here, 550.54.15 "
            "there");
  ASSERT_EQ(d->evidence.size(), 2U);
  EXPECT_EQ(d->evidence[0].source, "/proc/driver/nvidia/version");
  EXPECT_EQ(d->evidence[1].source, "/etc/cardiac/baseline.json");
  EXPECT_EQ(d->confidence, Confidence::kHigh);
  expect_finding(find(out, "drift.kernel_params"), Category::kConfiguration, Severity::kInfo,
                 "Set the baseline's value");
  expect_finding(find(out, "drift.kernel"), Category::kConfiguration, Severity::kWarning,
                 "Boot the baseline's kernel");
  // Against itself: nothing.
  in.fs = std::make_shared<RootFs>(kNode01);
  EXPECT_TRUE(drift(in, base).empty());
}

TEST(CheckDrift, GpuFactsNameTheGpuAndUnreadFactsAreStated) {
  RootFs fs(kNode01);
  DoctorInput in = window({{healthy(0), healthy(1)}});
  in.gpu_samples.back().system.cuda_driver_version = 12040;
  in.fs = std::make_shared<RootFs>(kNode01);
  auto base = baseline::capture(fs, in.last_gpus(), kT0);
  in.gpu_samples.back().gpus[1].power_limit_mw = 450'000;
  auto out = drift(in, base);
  ASSERT_EQ(ids(out), "drift.power_limit@1 ");
  expect_finding(&out[0], Category::kConfiguration, Severity::kWarning, "Set the baseline's limit");
  EXPECT_EQ(out[0].gpu.pci_bus_id, "0000:19:00.0");
  EXPECT_NE(out[0].explanation.find("450 here, 700 in the baseline"), std::string::npos);

  // Offline: what only NVML knows is not read, and said so once per family. The PCI bus
  // holds eight GPUs where the sample had two: the count differs too.
  DoctorInput offline;
  offline.fs = std::make_shared<RootFs>(kNode01);
  out = drift(offline, base);
  EXPECT_EQ(ids(out),
            "drift.gpu drift.clocks drift.cuda drift.gpu drift.gpu_mode drift.power_limit ");
  EXPECT_EQ(out[0].title,
            "GPU count differs from the baseline (taken on gpu-node-01): 8 here, 2 there");
  const Finding* modes = find(out, "drift.gpu_mode");
  ASSERT_NE(modes, nullptr);
  EXPECT_EQ(modes->severity, Severity::kWarning);  // MIG is critical, but not read is not known
  EXPECT_EQ(modes->confidence, Confidence::kLow);
  EXPECT_EQ(modes->evidence.size(), 6U);  // persistence, ECC and MIG of two GPUs
  EXPECT_NE(modes->title.find("not read here"), std::string::npos);
}

// H100s at their default application clocks, as the baseline node had them.
nvml::GpuReading at_default_clocks(unsigned index) {
  nvml::GpuReading g = healthy(index);
  g.app_clock_graphics_mhz = 1980;
  g.app_clock_memory_mhz = 2619;
  g.default_app_clock_graphics_mhz = 1980;
  g.default_app_clock_memory_mhz = 2619;
  return g;
}

// The case that matters: one node's GPU set below its default while the baseline's runs at it.
TEST(CheckDrift, ApplicationClocksBelowTheDefaultAreAStraggler) {
  RootFs fs(kNode01);
  DoctorInput in = window({{at_default_clocks(0), at_default_clocks(1)}});
  in.fs = std::make_shared<RootFs>(kNode01);
  auto base = baseline::capture(fs, in.last_gpus(), kT0);
  in.gpu_samples.back().gpus[1].app_clock_graphics_mhz = 1755;
  auto out = drift(in, base);
  ASSERT_EQ(ids(out), "drift.clocks@1 ");
  const Finding& f = out[0];
  expect_finding(&f, Category::kConfiguration, Severity::kWarning,
                 "Set the baseline's application clocks: `nvidia-smi -i 1 -ac 2619,1980`");
  EXPECT_EQ(f.gpu.pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(f.title,
            "GPU 1 application clocks (graphics/memory MHz) differs from the baseline (taken on "
            "gpu-node-01): 1755/2619 here, 1980/2619 there");
  EXPECT_TRUE(f.explanation.starts_with(
      "GPU 1 application clocks (graphics/memory MHz) 1755/2619 here, 1980/2619 in the "
      "baseline: "))
      << f.explanation;
  EXPECT_NE(f.explanation.find("a synchronous job runs at the pace of its slowest GPU"),
            std::string::npos);
  EXPECT_NE(f.explanation.find("This node's GPU runs slower than the baseline's."),
            std::string::npos)
      << f.explanation;
  EXPECT_NE(f.explanation.find("below its own default (1980/2619)"), std::string::npos)
      << f.explanation;
  // The baseline's clocks are the GPU's defaults: resetting them is enough.
  EXPECT_NE(f.actions[0].find("`nvidia-smi -i 1 -rac`"), std::string::npos) << f.actions[0];
  ASSERT_EQ(f.evidence.size(), 3U);
  EXPECT_EQ(f.evidence[2].text, "gpu.1.app_clocks_default = 1980/2619 here");

  // Above the baseline's (whose clocks were lowered): this GPU is not the slow one, and it is
  // not below its default.
  auto slow_base = base;
  for (auto& fact : slow_base.facts) {
    if (fact.key == "gpu.1.app_clocks") fact.value = "1410/2619";
  }
  in.gpu_samples.back().gpus[1].app_clock_graphics_mhz = 1980;
  out = drift(in, slow_base);
  ASSERT_EQ(ids(out), "drift.clocks@1 ");
  EXPECT_NE(out[0].explanation.find("runs faster than the baseline's"), std::string::npos);
  EXPECT_EQ(out[0].explanation.find("below its own default"), std::string::npos);
  EXPECT_EQ(out[0].actions[0].find("-rac"), std::string::npos) << out[0].actions[0];
}

// A baseline captured before application clocks were read: not compared, not a finding. A host
// whose driver refuses the call: not read, a warning, never a pass.
TEST(CheckDrift, OldBaselinesAndUnreadApplicationClocks) {
  RootFs fs(kNode01);
  DoctorInput in = window({{at_default_clocks(0), at_default_clocks(1)}});
  in.fs = std::make_shared<RootFs>(kNode01);
  auto old = baseline::capture(fs, in.last_gpus(), kT0);
  std::erase_if(old.facts, [](const baseline::Fact& f) {
    return f.key.find(".app_clocks") != std::string::npos;
  });
  in.gpu_samples.back().gpus[1].app_clock_graphics_mhz = 1755;
  EXPECT_TRUE(drift(in, old).empty());

  auto base = baseline::capture(
      fs, window({{at_default_clocks(0), at_default_clocks(1)}}).last_gpus(), kT0);
  auto& g = in.gpu_samples.back().gpus[1];
  g.app_clock_graphics_mhz.reset();
  g.app_clock_memory_mhz.reset();
  g.call_errors["nvmlDeviceGetApplicationsClock"] = "NO_PERMISSION";
  auto out = drift(in, base);
  ASSERT_EQ(ids(out), "drift.clocks ");
  EXPECT_EQ(out[0].severity, Severity::kWarning);
  EXPECT_EQ(out[0].confidence, Confidence::kLow);
  EXPECT_NE(out[0].title.find("gpu.1.app_clocks not read here"), std::string::npos) << out[0].title;
  EXPECT_NE(out[0].evidence[0].text.find("NO_PERMISSION"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::doctor::hw_test
