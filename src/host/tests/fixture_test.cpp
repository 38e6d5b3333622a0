// SPDX-License-Identifier: Apache-2.0
// collect_host over the captured trees in tests/fixtures/hosts.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "host/host.h"
#include "host/host_json.h"

namespace cardiac::host {
namespace {

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;

HostSnapshot collect_case(const std::string& name, TimeNs t = kT0) {
  RootFs fs(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/" + name);
  return collect_host(fs, t);
}

bool has_error_for(const HostSnapshot& s, const std::string& prefix) {
  return std::any_of(s.errors.begin(), s.errors.end(),
                     [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
}

TEST(HostDebianGpu8x, EightH100sOnTheBus) {
  auto s = collect_case("debian-gpu-8x");
  EXPECT_TRUE(s.errors.empty()) << s.errors.front();
  ASSERT_TRUE(s.pci);
  ASSERT_EQ(s.pci->gpus.size(), 8u);
  EXPECT_EQ(s.pci->other_nvidia_functions, 4u);  // NVSwitches
  const char* bus_ids[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                           "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  for (std::size_t i = 0; i < 8; ++i) {
    const PciDevice& g = s.pci->gpus[i];
    EXPECT_EQ(g.bus_id, bus_ids[i]);
    EXPECT_EQ(g.device, 0x2330u);
    EXPECT_EQ(g.class_code, 0x030200u);
    EXPECT_EQ(g.driver, "nvidia");
    EXPECT_EQ(g.current_link_gts, 32.0);
    EXPECT_EQ(g.max_link_width, 16u);
  }
}

TEST(HostDebianGpu8x, DriverSystemAndDState) {
  auto s = collect_case("debian-gpu-8x");
  EXPECT_EQ(s.system.nvidia_driver_version, "550.54.15");
  EXPECT_TRUE(s.system.nvidia_module_loaded);
  EXPECT_EQ(s.system.hostname, "gpu-node-01");
  EXPECT_TRUE(s.system.kernel);
  EXPECT_TRUE(s.system.uptime_s);
  ASSERT_EQ(s.dstate_processes.size(), 1u);
  const DStateProcess& p = s.dstate_processes[0];
  EXPECT_EQ(p.pid, 48213);
  EXPECT_EQ(p.comm, "nvidia-smi");
  EXPECT_EQ(p.wchan, "nv_wait_for_completion");
  EXPECT_EQ(p.cmdline, "nvidia-smi");
  RootFs fs(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x");
  EXPECT_EQ(read_process_name(fs, 48213).value(), "nvidia-smi");
  EXPECT_EQ(read_process_name(fs, 1).value(), "systemd");
}

TEST(HostDebianGpu8x, CpuMemoryPressure) {
  auto s = collect_case("debian-gpu-8x");
  ASSERT_TRUE(s.cpu);
  EXPECT_EQ(s.cpu->core_count(), 2u);
  EXPECT_EQ(s.cpu->procs_blocked, 1u);
  ASSERT_TRUE(s.memory);
  EXPECT_GT(s.memory->total, 0u);
  EXPECT_TRUE(s.memory->available);
  EXPECT_TRUE(s.load);
  EXPECT_TRUE(s.pressure.cpu);
  EXPECT_TRUE(s.pressure.memory);
  EXPECT_TRUE(s.pressure.io);
}

TEST(HostDebianGpu8x, NicsAndDisks) {
  auto s = collect_case("debian-gpu-8x");
  ASSERT_EQ(s.nics.size(), 2u);
  EXPECT_EQ(s.nics[0].name, "eth0");
  EXPECT_EQ(s.nics[0].speed_mbps, 25000u);
  EXPECT_EQ(s.nics[0].operstate, "up");
  EXPECT_EQ(s.nics[1].name, "ib0");
  EXPECT_EQ(s.nics[1].speed_mbps, 200000u);
  ASSERT_EQ(s.disks.size(), 2u);
  EXPECT_EQ(s.disks[0].name, "vda");
  EXPECT_EQ(s.disks[1].name, "nvme0n1");
  ASSERT_EQ(s.filesystems.size(), 2u);
  EXPECT_EQ(s.filesystems[0].mount_point, "/");
  EXPECT_EQ(s.filesystems[0].fs_type, "ext4");
  ASSERT_TRUE(s.filesystems[0].total);
  EXPECT_GT(*s.filesystems[0].total, 0u);
  EXPECT_EQ(s.filesystems[1].mount_point, "/data");
  EXPECT_EQ(s.filesystems[1].total, 3840755982336u);
}

TEST(HostDebianGpu8x, JsonDumps) {
  auto s = collect_case("debian-gpu-8x");
  auto j = to_json(s, nullptr);
  EXPECT_EQ(j["pci"]["nvidia_gpus"].size(), 8u);
  EXPECT_EQ(j["system"]["nvidia_driver_version"], "550.54.15");
  EXPECT_FALSE(j.dump().empty());
}

TEST(HostMinimal, OnlyThreeFiles) {
  auto s = collect_case("minimal");
  EXPECT_TRUE(s.errors.empty()) << s.errors.front();
  EXPECT_TRUE(s.cpu);
  EXPECT_TRUE(s.memory);
  EXPECT_TRUE(s.system.uptime_s);
  EXPECT_FALSE(s.load);
  EXPECT_FALSE(s.pressure.cpu);
  EXPECT_FALSE(s.pressure.io);
  EXPECT_TRUE(s.filesystems.empty());
  EXPECT_TRUE(s.disks.empty());
  EXPECT_TRUE(s.nics.empty());
  EXPECT_TRUE(s.dstate_processes.empty());
  EXPECT_FALSE(s.pci);
  EXPECT_FALSE(s.system.kernel);
  EXPECT_FALSE(s.system.nvidia_driver_version);
  EXPECT_FALSE(s.system.nvidia_module_loaded);
  EXPECT_FALSE(to_json(s, nullptr).dump().empty());
}

TEST(HostGarbage, ErrorsNameTheFilesAndLines) {
  auto s = collect_case("garbage");
  EXPECT_FALSE(s.cpu);
  EXPECT_FALSE(s.memory);
  EXPECT_FALSE(s.load);
  EXPECT_TRUE(s.nics.empty());
  EXPECT_FALSE(s.system.uptime_s);
  EXPECT_TRUE(has_error_for(s, "/proc/stat line 2: ")) << testing::PrintToString(s.errors);
  EXPECT_TRUE(has_error_for(s, "/proc/meminfo line 2: ")) << testing::PrintToString(s.errors);
  EXPECT_TRUE(has_error_for(s, "/proc/net/dev line 3: ")) << testing::PrintToString(s.errors);
  EXPECT_TRUE(has_error_for(s, "/proc/loadavg line 1: empty")) << testing::PrintToString(s.errors);
  EXPECT_TRUE(has_error_for(s, "/proc/uptime line 1: ")) << testing::PrintToString(s.errors);
  EXPECT_EQ(s.errors.size(), 5u) << testing::PrintToString(s.errors);
  EXPECT_NO_THROW((void)to_json(s, nullptr).dump());
}

TEST(HostOldKernel, OldFormatsAndAbsentFields) {
  auto s = collect_case("old-kernel");
  EXPECT_TRUE(s.errors.empty()) << s.errors.front();
  ASSERT_TRUE(s.cpu);
  EXPECT_EQ(s.cpu->core_count(), 2u);
  EXPECT_FALSE(s.cpu->total.has_steal());
  ASSERT_TRUE(s.memory);
  EXPECT_FALSE(s.memory->available);
  EXPECT_TRUE(s.memory->swap_total);
  EXPECT_FALSE(s.pressure.cpu);
  EXPECT_FALSE(s.pressure.memory);
  EXPECT_FALSE(s.pressure.io);
  ASSERT_EQ(s.disks.size(), 1u);
  EXPECT_EQ(s.disks[0].name, "sda");
  ASSERT_EQ(s.filesystems.size(), 3u);
  EXPECT_EQ(s.filesystems[0].mount_point, "/");
  EXPECT_EQ(s.filesystems[0].fs_type, "ext3");
  EXPECT_TRUE(s.filesystems[0].total);
  EXPECT_TRUE(s.filesystems[2].network);
  EXPECT_FALSE(s.filesystems[2].total);
  EXPECT_EQ(s.system.kernel, "2.6.9-89.ELsmp");
  EXPECT_FALSE(s.pci);

  HostSnapshot later = s;
  later.taken_at += kNsPerSec;
  later.cpu->total.user += 100;
  auto r = compute_rates(s, later);
  ASSERT_TRUE(r.cpu.total);
  EXPECT_FALSE(r.cpu.total->steal);
  auto j = to_json(later, &r);
  EXPECT_FALSE(j["cpu"]["usage"].contains("steal_pct"));
  EXPECT_FALSE(j["memory"].contains("available_bytes"));
}

TEST(HostIowaitBottleneck, HighIowaitAndSaturatedDisk) {
  auto t0 = collect_case("iowait-bottleneck/t0", kT0);
  auto t1 = collect_case("iowait-bottleneck/t1", kT0 + kNsPerSec);
  EXPECT_TRUE(t0.errors.empty());
  EXPECT_TRUE(t1.errors.empty());
  auto r = compute_rates(t0, t1);
  EXPECT_DOUBLE_EQ(r.interval_s, 1.0);
  ASSERT_TRUE(r.cpu.total);
  ASSERT_TRUE(r.cpu.total->iowait);
  EXPECT_NEAR(*r.cpu.total->iowait, 45.0, 0.5);
  auto nvme = std::find_if(r.disks.begin(), r.disks.end(),
                           [](const DiskRates& d) { return d.name == "nvme0n1"; });
  ASSERT_NE(nvme, r.disks.end());
  EXPECT_NEAR(nvme->util_percent, 98.5, 0.1);
  EXPECT_NEAR(nvme->read_bytes_per_s, 300.0 * 1024 * 1024, 1.0);
  ASSERT_TRUE(nvme->await_ms);
  EXPECT_NEAR(*nvme->await_ms, 11.85, 0.01);
  ASSERT_EQ(t1.dstate_processes.size(), 2u);
  EXPECT_EQ(t1.dstate_processes[0].wchan, "io_schedule");
  EXPECT_EQ(t1.cpu->procs_blocked, 6u);
  auto j = to_json(t1, &r);
  EXPECT_DOUBLE_EQ(j["cpu"]["usage"]["iowait_pct"].get<double>(), 45.0);
}

}  // namespace
}  // namespace cardiac::host
