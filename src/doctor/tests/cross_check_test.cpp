// SPDX-License-Identifier: Apache-2.0
// add_cross_check_plans: which findings suspect the card, one plan per GPU on its worst
// finding, the others pointing to it, and what the plan says.
#include <gtest/gtest.h>

#include <algorithm>

#include "doctor/checks/checks.h"

namespace cardiac::doctor {
namespace {

GpuRef gpu(std::optional<unsigned> index, std::string bus, std::string uuid = "",
           std::string serial = "") {
  GpuRef g;
  g.index = index;
  g.pci_bus_id = std::move(bus);
  g.uuid = std::move(uuid);
  g.serial = std::move(serial);
  return g;
}

Finding finding(std::string id, Category c, Severity s, GpuRef g,
                Confidence conf = Confidence::kHigh) {
  Finding f;
  f.id = std::move(id);
  f.category = c;
  f.severity = s;
  f.confidence = conf;
  f.gpu = std::move(g);
  f.title = f.id + " title";
  f.actions = {"first action of " + f.id};
  return f;
}

std::size_t plans(const std::vector<Finding>& fs) {
  return static_cast<std::size_t>(
      std::count_if(fs.begin(), fs.end(), [](const Finding& f) { return f.cross_check; }));
}

const Finding& by_id(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  EXPECT_NE(it, fs.end()) << id;
  return *it;
}

std::vector<Finding> mixed() {
  return {
      // The kernel log names GPU 5 by bus id and serial; NVML by index, bus id and UUID.
      finding("xid.79", Category::kHardware, Severity::kCritical,
              gpu(std::nullopt, "0000:ab:00.0", "", "1654922001319")),
      finding("gpu.lost", Category::kHardware, Severity::kCritical,
              gpu(5, "0000:ab:00.0", "GPU-abc")),
      finding("gpu.ecc.dbe", Category::kHardware, Severity::kCritical, gpu(2, "0000:3a:00.0")),
      finding("gpu.row_remap.pending", Category::kHardware, Severity::kWarning,
              gpu(2, "0000:3a:00.0")),
      finding("gpu.thermal.near_shutdown", Category::kHardware, Severity::kCritical,
              gpu(1, "0000:2a:00.0")),
      finding("gpu.pcie.degraded", Category::kHardware, Severity::kWarning, gpu(4, "0000:9a:00.0")),
      finding("gpu.count_below_expected", Category::kHardware, Severity::kCritical, GpuRef{}),
      finding("driver.nvml_hung", Category::kDriver, Severity::kCritical, gpu(3, "0000:5d:00.0")),
  };
}

TEST(CrossCheck, OnePlanPerSuspectGpu) {
  auto fs = mixed();
  add_cross_check_plans(fs);
  // GPU 5 (two findings), GPU 2, GPU 1 (critical hardware finding with a GPU).
  EXPECT_EQ(plans(fs), 3U);
  const Finding& xid = by_id(fs, "xid.79");
  const Finding& lost = by_id(fs, "gpu.lost");
  EXPECT_NE(xid.cross_check.has_value(), lost.cross_check.has_value());
  const Finding& holder = xid.cross_check ? xid : lost;
  const Finding& other = xid.cross_check ? lost : xid;
  EXPECT_EQ(other.actions.front(), "first action of " + other.id) << "first action unchanged";
  EXPECT_EQ(other.actions.back(),
            "Cross-check this card: see the plan under \"" + holder.title + "\"");
  // The plan names the card with what both findings know: serial from the log, index from NVML.
  const auto& steps = holder.cross_check->steps;
  ASSERT_FALSE(steps.empty());
  EXPECT_NE(steps.front().find("GPU 5 (0000:ab:00.0, serial 1654922001319)"), std::string::npos)
      << steps.front();
  EXPECT_NE(steps.front().find("GPU-abc"), std::string::npos);

  EXPECT_TRUE(by_id(fs, "gpu.ecc.dbe").cross_check);
  EXPECT_FALSE(by_id(fs, "gpu.row_remap.pending").cross_check) << "not a suspect on its own";
  EXPECT_TRUE(by_id(fs, "gpu.thermal.near_shutdown").cross_check);
  EXPECT_FALSE(by_id(fs, "gpu.pcie.degraded").cross_check);
  EXPECT_FALSE(by_id(fs, "gpu.count_below_expected").cross_check) << "no card to name";
  EXPECT_FALSE(by_id(fs, "driver.nvml_hung").cross_check) << "a driver finding";
}

TEST(CrossCheck, PlanGoesToTheWorstFindingOfTheGpu) {
  std::vector<Finding> fs = {
      finding("xid.48", Category::kHardware, Severity::kWarning, gpu(2, "0000:3a:00.0")),
      finding("gpu.ecc.dbe", Category::kHardware, Severity::kCritical, gpu(2, "0000:3a:00.0")),
  };
  add_cross_check_plans(fs);
  EXPECT_FALSE(fs[0].cross_check);
  EXPECT_TRUE(fs[1].cross_check);
  EXPECT_EQ(fs[0].actions.back(),
            "Cross-check this card: see the plan under \"gpu.ecc.dbe title\"");
}

TEST(CrossCheck, SecondPassChangesNothing) {
  auto fs = mixed();
  add_cross_check_plans(fs);
  auto once = fs;
  add_cross_check_plans(fs);
  ASSERT_EQ(fs.size(), once.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    EXPECT_EQ(fs[i].actions, once[i].actions) << fs[i].id;
    EXPECT_EQ(fs[i].cross_check.has_value(), once[i].cross_check.has_value()) << fs[i].id;
  }
}

TEST(CrossCheck, DifferentBusIdsAreDifferentCards) {
  std::vector<Finding> fs = {
      finding("xid.79", Category::kHardware, Severity::kCritical,
              gpu(std::nullopt, "0000:18:00.0")),
      finding("xid.79", Category::kHardware, Severity::kCritical,
              gpu(std::nullopt, "0000:2a:00.0")),
  };
  add_cross_check_plans(fs);
  EXPECT_EQ(plans(fs), 2U);
}

TEST(CrossCheck, PlanContents) {
  std::vector<Finding> fs = {finding("gpu.lost", Category::kHardware, Severity::kCritical,
                                     gpu(5, "0000:ab:00.0", "GPU-abc", "1654922001319"))};
  add_cross_check_plans(fs);
  ASSERT_TRUE(fs[0].cross_check);
  const CrossCheckPlan& p = *fs[0].cross_check;
  auto any = [](const std::vector<std::string>& v, std::string_view needle) {
    return std::any_of(v.begin(), v.end(),
                       [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  };
  EXPECT_TRUE(any(p.steps, "known-good server"));
  EXPECT_TRUE(any(p.steps, "put a known-good card into its slot (bus id 0000:ab:00.0)"));
  EXPECT_TRUE(any(p.steps, "`cardiac status` and `cardiac doctor`"));
  EXPECT_TRUE(any(p.steps, "serial 1654922001319"));
  ASSERT_EQ(p.outcomes.size(), 4U);
  EXPECT_NE(p.outcomes[0].meaning.find("RMA it (serial 1654922001319)"), std::string::npos);
  EXPECT_NE(p.outcomes[1].meaning.find("riser"), std::string::npos);
  EXPECT_NE(p.outcomes[2].meaning.find("oxidation"), std::string::npos);
  EXPECT_NE(p.outcomes[3].meaning.find("power supplies"), std::string::npos);
  EXPECT_TRUE(any(p.physical_checks, "Power cables"));
  EXPECT_TRUE(any(p.physical_checks, "Gold fingers"));
  EXPECT_TRUE(any(p.physical_checks, "thermal paste"));
  EXPECT_TRUE(any(p.physical_checks, "burnt memory chips"));
  EXPECT_NE(p.environment.find("16–25 °C"), std::string::npos);
}

TEST(CrossCheck, UnknownSerialSaysWhereToReadIt) {
  std::vector<Finding> fs = {finding("kernel.fallen_off_bus", Category::kHardware,
                                     Severity::kCritical, gpu(std::nullopt, "0000:18:00.0"))};
  add_cross_check_plans(fs);
  ASSERT_TRUE(fs[0].cross_check);
  EXPECT_NE(fs[0].cross_check->steps.front().find("serial unknown: read it from the card's label"),
            std::string::npos);
}

// The hardware check and the plans together: a lost GPU gets a plan naming its slot.
TEST(CrossCheck, LostGpuFromTheHardwareCheck) {
  DoctorInput in;
  nvml::GpuSnapshot s;
  s.available = true;
  s.system.device_count = 1;
  nvml::GpuReading r;
  r.index = 0;
  r.health = nvml::DeviceHealth::kLost;
  r.health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  r.pci_bus_id = "0000:18:00.0";
  r.serial = "1654922001234";
  s.gpus.push_back(r);
  in.gpu_samples.push_back(s);
  std::vector<Finding> fs;
  check_gpu_hardware(in, fs);
  add_cross_check_plans(fs);
  ASSERT_EQ(fs.size(), 1U);
  ASSERT_TRUE(fs[0].cross_check);
  EXPECT_NE(fs[0].cross_check->steps.front().find("GPU 0 (0000:18:00.0, serial 1654922001234)"),
            std::string::npos)
      << fs[0].cross_check->steps.front();
}

}  // namespace
}  // namespace cardiac::doctor
