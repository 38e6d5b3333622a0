// SPDX-License-Identifier: Apache-2.0
// Per-GPU verdicts: each rule on its own, and the wording people read.
#include <gtest/gtest.h>

#include "health/verdict.h"
#include "nvml/types.h"

namespace cardiac::health {
namespace {

nvml::GpuReading healthy() {
  nvml::GpuReading g;
  g.name = "NVIDIA H100 80GB HBM3";
  g.temperature = 50;
  g.temperature_slowdown = 87;
  g.temperature_shutdown = 92;
  g.utilization_gpu = 90;
  g.pcie_gen_current = 5;
  g.pcie_gen_max = 5;
  g.pcie_width_current = 16;
  g.pcie_width_max = 16;
  g.ecc_volatile_uncorrected = 0;
  g.clock_event_reasons = 0;
  return g;
}

TEST(GpuVerdict, HealthyIsOk) {
  auto v = judge_gpu(healthy());
  EXPECT_EQ(v.level, Level::kOk);
  EXPECT_TRUE(v.reasons.empty());
}

TEST(GpuVerdict, LostFailsWithItsReason) {
  auto g = healthy();
  g.health = nvml::DeviceHealth::kLost;
  auto v = judge_gpu(g);
  EXPECT_EQ(v.level, Level::kFail);
  ASSERT_FALSE(v.reasons.empty());
  EXPECT_EQ(v.reasons[0].text, "lost from the bus (GPU_IS_LOST)");
}

TEST(GpuVerdict, ThermalSlowdownNamesTemperatureAndThreshold) {
  auto g = healthy();
  g.temperature = 86;
  g.temperature_slowdown = 85;
  g.clock_event_reasons = nvml::kReasonHwThermalSlowdown | nvml::kReasonHwSlowdown;
  auto v = judge_gpu(g);
  EXPECT_EQ(v.level, Level::kWarn);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].text, "HW thermal slowdown at 86 °C, slowdown threshold 85 °C");
}

TEST(GpuVerdict, DoubleBitEccFails) {
  auto g = healthy();
  g.ecc_volatile_uncorrected = 2;
  g.remapped_rows_pending = true;
  auto v = judge_gpu(g);
  EXPECT_EQ(v.level, Level::kFail);
  EXPECT_EQ(v.reasons[0].code, "ecc_dbe");
  EXPECT_EQ(v.reasons[1].code, "row_remap_pending");
}

TEST(GpuVerdict, PcieJudgedOnlyUnderLoad) {
  auto g = healthy();
  g.pcie_gen_current = 3;
  g.pcie_width_current = 8;
  EXPECT_EQ(judge_gpu(g).reasons.at(0).text, "PCIe link gen3 x8 under load, capable of gen5 x16");
  g.utilization_gpu = 0;  // idle GPUs downtrain their link to save power
  EXPECT_EQ(judge_gpu(g).level, Level::kOk);
}

TEST(GpuVerdict, AbsentValuesNeverTrigger) {
  nvml::GpuReading g;  // a consumer GPU answering almost nothing
  EXPECT_EQ(judge_gpu(g).level, Level::kOk);
}

TEST(GpuVerdict, RetiredPageLimitFails) {
  auto g = healthy();
  g.retired_pages_sbe = 60;
  g.retired_pages_dbe = 3;
  EXPECT_EQ(judge_gpu(g).reasons.at(0).code, "retired_pages_limit");
}

}  // namespace
}  // namespace cardiac::health
