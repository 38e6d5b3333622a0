// SPDX-License-Identifier: Apache-2.0
// The one catalog of GPU faults: fencing Xids, fault classes of kernel-log events, fence reasons.
#include "health/faults.h"

#include <gtest/gtest.h>

#include <set>

#include "kmsg/event.h"

namespace cardiac::health {
namespace {

TEST(Faults, FencingXidsAreTheOnesNeedingResetOrReboot) {
  std::set<int> fencing;
  for (const auto& x : xid_catalog()) {
    if (x.fences) fencing.insert(x.code);
  }
  EXPECT_EQ(fencing, (std::set<int>{46, 48, 62, 64, 79, 95, 119, 120, 140, 143}));
  for (int code : fencing) EXPECT_EQ(lookup_xid(code).severity, Severity::kCritical) << code;
}

TEST(Faults, XidClasses) {
  EXPECT_EQ(lookup_xid(79).fault_class, FaultClass::kFallenOffBus);
  EXPECT_EQ(lookup_xid(74).fault_class, FaultClass::kNvlinkFatal);
  EXPECT_EQ(lookup_xid(48).fault_class, FaultClass::kCriticalXid);
  EXPECT_EQ(lookup_xid(13).fault_class, FaultClass::kNone);
  EXPECT_EQ(lookup_xid(9999).fault_class, FaultClass::kNone);
  EXPECT_EQ(xids_of_class(FaultClass::kFallenOffBus), std::vector<int>{79});
  // Every critical Xid pages someone through one class or another.
  for (const auto& x : xid_catalog()) {
    if (x.severity == Severity::kCritical) {
      EXPECT_NE(x.fault_class, FaultClass::kNone) << x.code;
    }
  }
}

TEST(Faults, KernelEventClasses) {
  auto cls = [](std::string_view line) {
    auto e = kmsg::classify(line);
    return e ? fault_class_of(*e) : FaultClass::kNone;
  };
  EXPECT_EQ(cls("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
                "off the bus."),
            FaultClass::kFallenOffBus);
  EXPECT_EQ(cls("NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python, An uncorrectable double "
                "bit error (DBE) has been detected on GPU in the framebuffer at partition 0."),
            FaultClass::kCriticalXid);
  EXPECT_EQ(cls("NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, name=python, Graphics Exception"),
            FaultClass::kNone);
  EXPECT_EQ(cls("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."), FaultClass::kFallenOffBus);
}

TEST(Faults, NamesAndMetricsAreDistinct) {
  std::set<std::string_view> names, metrics;
  for (const auto& c : fault_classes()) {
    EXPECT_TRUE(names.insert(c.name).second);
    EXPECT_TRUE(metrics.insert(c.rule_metric).second);
    EXPECT_EQ(fault_class_name(c.fault_class), c.name);
  }
  EXPECT_EQ(fault_class_name(FaultClass::kNone), "none");
}

TEST(Faults, FenceReasons) {
  nvml::GpuReading g;
  g.pci_bus_id = "00000000:3B:00.0";
  g.health = nvml::DeviceHealth::kOk;
  EXPECT_FALSE(fence_reason(g, {}));
  EXPECT_FALSE(fence_reason(g, {{{"0000:3b:00.0", 13}, 5}}));  // an application's Xid
  EXPECT_EQ(fence_reason(g, {{{"0000:3b:00.0", 79}, 1}}), "Xid 79 on 0000:3b:00.0");
  EXPECT_FALSE(fence_reason(g, {{{"0000:5e:00.0", 79}, 1}}));  // another GPU's
  g.ecc_volatile_uncorrected = 1;
  EXPECT_TRUE(fence_reason(g, {}));
  g.ecc_volatile_uncorrected = 0;
  g.remapped_rows_failure = true;
  EXPECT_EQ(fence_reason(g, {}), "row remapping failed");
}

}  // namespace
}  // namespace cardiac::health
