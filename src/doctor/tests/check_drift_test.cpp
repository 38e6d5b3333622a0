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

}  // namespace
}  // namespace cardiac::doctor::hw_test
