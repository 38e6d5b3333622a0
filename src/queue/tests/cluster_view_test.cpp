// SPDX-License-Identifier: Apache-2.0
// The scheduler's view: fences, critical findings, GPUs busy outside the queue.
#include "queue/cluster_view.h"

#include <gtest/gtest.h>

#include "core/format.h"

#include "queue/tests/support.h"

namespace cardiac::queue {
namespace {

using testing::make_report;

ClusterInput input_for(const health::StatusReport& r) {
  ClusterInput in;
  in.report = &r;
  in.is_queue_or_gone = [](std::uint32_t pid) { return pid == 1; };  // pid 1: a queue job
  return in;
}

TEST(ClusterView, HealthyMachine) {
  auto r = make_report(8);
  auto v = build_cluster(input_for(*r));
  ASSERT_EQ(v.cluster.nodes.size(), 1u);
  ASSERT_EQ(v.cluster.nodes[0].gpus.size(), 8u);
  EXPECT_EQ(v.cluster.nodes[0].gpus[3].memory_bytes, 80ULL << 30);
  EXPECT_TRUE(v.fenced.empty());
  EXPECT_TRUE(v.busy_outside.empty());
  EXPECT_EQ(v.uuid_of.at(5), "GPU-test-5");
}

// Locality for the placement: the NVLink fabric from active links, the NUMA node of each slot
// from sysfs (matched by bus id whatever its spelling).
TEST(ClusterView, NvlinkAndNumaLocalityReachThePlacement) {
  auto r = make_report(4);
  host::PciScan pci;
  for (unsigned i = 0; i < 4; ++i) {
    r->gpus[i].reading.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x3a + i);
    host::PciDevice d;
    d.bus_id = fmt::format("0000:{:02x}:00.0", 0x3a + i);
    if (i != 3) d.numa_node = i < 2 ? 0 : 1;
    pci.gpus.push_back(d);
  }
  r->host.pci = pci;
  nvml::NvLink up;
  up.active = true;
  nvml::NvLink down;
  r->gpus[0].reading.nvlinks = {up};
  r->gpus[1].reading.nvlinks = {down};
  auto v = build_cluster(input_for(*r));
  const auto& gpus = v.cluster.nodes[0].gpus;
  EXPECT_EQ(gpus[0].nvlink_domain, 0);
  EXPECT_EQ(gpus[1].nvlink_domain, -1);
  EXPECT_EQ(gpus[0].numa_node, 0);
  EXPECT_EQ(gpus[2].numa_node, 1);
  EXPECT_EQ(gpus[3].numa_node, -1);
}

TEST(ClusterView, CriticalFindingsFence) {
  auto r = make_report(8);
  r->gpus[1].reading.health = nvml::DeviceHealth::kLost;
  r->gpus[1].reading.health_detail = "nvmlDeviceGetUUID returned GPU_IS_LOST";
  r->gpus[2].reading.ecc_volatile_uncorrected = 2;
  r->gpus[3].reading.remapped_rows_failure = true;
  auto in = input_for(*r);
  in.xid_counts[{"0000:14:00.0", 79}] = 1;  // GPU 4's bus
  in.xid_counts[{"0000:15:00.0", 13}] = 5;  // GPU 5: Xid 13 is the application's fault
  auto v = build_cluster(in);
  EXPECT_EQ(v.critical.size(), 4u);
  EXPECT_NE(v.critical.at(1).find("GPU_IS_LOST"), std::string::npos);
  EXPECT_NE(v.critical.at(2).find("double-bit"), std::string::npos);
  EXPECT_NE(v.critical.at(4).find("Xid 79"), std::string::npos);
  EXPECT_FALSE(v.critical.count(5));
  for (unsigned g : {1u, 2u, 3u, 4u}) {
    EXPECT_EQ(v.cluster.nodes[0].gpus[g].health, sched::GpuHealth::kFenced) << g;
  }
  EXPECT_EQ(v.cluster.nodes[0].gpus[5].health, sched::GpuHealth::kOk);
}

TEST(ClusterView, FenceRowsByUuidOrIndex) {
  auto r = make_report(4);
  auto in = input_for(*r);
  in.fences.push_back({1, 9, "GPU-test-2", "bad fan", "root", false, 0, {}, ""});
  in.fences.push_back({2, 3, "", "lost earlier", "cardiac", true, 0, {}, ""});
  auto v = build_cluster(in);
  EXPECT_EQ(v.fenced.size(), 2u);
  EXPECT_NE(v.fenced.at(2).find("bad fan"), std::string::npos);
  EXPECT_NE(v.fenced.at(3).find("lost earlier"), std::string::npos);
  EXPECT_TRUE(v.critical.empty());
}

TEST(ClusterView, ProcessesOutsideTheQueueMakeAGpuBusy) {
  auto r = make_report(4);
  r->gpus[0].reading.processes = {{4242, 30ULL << 30, "python", "compute"}};
  r->gpus[1].reading.processes = {{1, 10ULL << 30, "job", "compute"}};  // a queue job's
  r->gpus[2].reading.processes_supported = false;
  r->gpus[2].reading.memory_used = 12ULL << 30;
  // GPU 3 runs a queue job: whatever runs there is the queue's.
  r->gpus[3].reading.processes = {{5555, 1ULL << 30, "child", "compute"}};
  auto in = input_for(*r);
  Job running;
  running.id = 1;
  running.gpu_indices = {3};
  running.gpu_uuids = {"GPU-test-3"};
  in.running = {running};
  auto v = build_cluster(in);
  EXPECT_EQ(v.busy_outside.size(), 2u);
  EXPECT_EQ(v.busy_outside.at(0), "pid 4242 (python)");
  EXPECT_TRUE(v.cluster.nodes[0].gpus[0].busy_outside);
  EXPECT_EQ(v.cluster.nodes[0].gpus[0].memory_used_outside, 30ULL << 30);
  EXPECT_FALSE(v.cluster.nodes[0].gpus[1].busy_outside);
  EXPECT_TRUE(v.cluster.nodes[0].gpus[2].busy_outside);
  EXPECT_FALSE(v.cluster.nodes[0].gpus[3].busy_outside);
  ASSERT_EQ(v.cluster.running.size(), 1u);
  EXPECT_EQ(v.cluster.running[0].placement[0].gpus, std::vector<unsigned>{3});

  in.count_outside = false;
  EXPECT_TRUE(build_cluster(in).busy_outside.empty());
}

TEST(ClusterView, RunningJobsFollowTheirUuids) {
  auto r = make_report(4);
  std::swap(r->gpus[0].reading.uuid, r->gpus[2].reading.uuid);  // renumbered
  auto v = build_cluster(input_for(*r));
  EXPECT_EQ(current_index(v, "GPU-test-0", 0), 2u);
  EXPECT_EQ(current_index(v, "", 1), 1u);
  EXPECT_FALSE(current_index(v, "GPU-gone", 3));   // index 3 answers with another UUID
  EXPECT_EQ(current_index(v, "GPU-gone", 7), 7u);  // nobody there: keep the index
}

}  // namespace
}  // namespace cardiac::queue
