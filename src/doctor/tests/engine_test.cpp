// SPDX-License-Identifier: Apache-2.0
// diagnose(): every check runs, events are kept, findings come out worst first, GPUs are
// joined from NVML, the PCI bus and the kernel log.
#include <gtest/gtest.h>

#include "doctor/checks/checks.h"
#include "doctor/gpu_map.h"

namespace cardiac::doctor {
namespace {

TEST(Engine, EmptyInputGivesAnEmptyReport) {
  DoctorInput in;
  in.host_samples.emplace_back();
  Report r = diagnose(in);
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(r.worst(), Severity::kInfo);
}

TEST(Engine, FindingsAreSortedWorstFirstThenByCategoryAndGpu) {
  std::vector<Finding> fs(4);
  fs[0].id = "a";
  fs[0].severity = Severity::kInfo;
  fs[1].id = "b";
  fs[1].severity = Severity::kCritical;
  fs[1].category = Category::kNetwork;
  fs[2].id = "c";
  fs[2].severity = Severity::kCritical;
  fs[2].category = Category::kHardware;
  fs[2].gpu.index = 3;
  fs[3].id = "d";
  fs[3].severity = Severity::kCritical;
  fs[3].category = Category::kHardware;
  fs[3].gpu.index = 1;
  sort_findings(fs);
  EXPECT_EQ(fs[0].id, "d");
  EXPECT_EQ(fs[1].id, "c");
  EXPECT_EQ(fs[2].id, "b");
  EXPECT_EQ(fs[3].id, "a");
}

TEST(Engine, GpuMapJoinsNvmlPciBusAndKernelLog) {
  DoctorInput in;
  nvml::GpuSnapshot s;
  s.available = true;
  nvml::GpuReading g;
  g.index = 0;
  g.pci_bus_id = "0000:18:00.0";
  g.uuid = "GPU-aaaa";
  s.gpus.push_back(g);
  in.gpu_samples.push_back(s);
  host::HostSnapshot h;
  host::PciScan scan;
  host::PciDevice d1;
  d1.bus_id = "0000:18:00.0";
  host::PciDevice d2;
  d2.bus_id = "0000:3b:00.0";  // on the bus, unknown to NVML
  scan.gpus = {d1, d2};
  h.pci = scan;
  in.host_samples.push_back(h);
  kmsg::KernelEvent map;
  map.kind = kmsg::EventKind::kGpuMap;
  map.pci_bus_id = "0000:3b:00.0";
  map.uuid = "GPU-bbbb";
  map.serial = "1654922001234";
  in.events.push_back(map);

  GpuMap m(in);
  ASSERT_EQ(m.all().size(), 2U);
  EXPECT_EQ(m.all()[0].index, 0U);
  EXPECT_EQ(m.by_bus_id("0000:3b:00").uuid, "GPU-bbbb");
  EXPECT_EQ(m.by_bus_id("0000:3b:00.0").serial, "1654922001234");
  EXPECT_EQ(m.by_uuid("GPU-aaaa").pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(m.by_bus_id("0000:99:00.0").pci_bus_id, "0000:99:00.0");
  EXPECT_TRUE(m.by_bus_id("not a bus id").empty());
  EXPECT_EQ(m.by_index(0).label(), "GPU 0 (0000:18:00.0)");

  Report r = diagnose(in);
  EXPECT_EQ(r.gpus.size(), 2U);
  ASSERT_EQ(r.events.size(), 1U);
  EXPECT_EQ(r.events[0].kind, kmsg::EventKind::kGpuMap);
}

TEST(Engine, ProbeStatistics) {
  ProbeResult p;
  p.sent = 4;
  p.received = 3;
  p.rtt_ms = {1.0, 3.0, 2.0};
  EXPECT_DOUBLE_EQ(p.loss_percent(), 25.0);
  EXPECT_DOUBLE_EQ(p.mean_ms().value(), 2.0);
  EXPECT_DOUBLE_EQ(p.jitter_ms().value(), 1.5);
  ProbeResult none;
  EXPECT_DOUBLE_EQ(none.loss_percent(), 0.0);
  EXPECT_FALSE(none.mean_ms());
}

}  // namespace
}  // namespace cardiac::doctor
