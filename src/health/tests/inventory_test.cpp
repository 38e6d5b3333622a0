// SPDX-License-Identifier: Apache-2.0
// Inventory verdicts: NVML missing, GPUs on the bus but not in NVML, driver upgraded without
// a reboot; and host verdicts.
#include <gtest/gtest.h>

#include "health/verdict.h"

namespace cardiac::health {
namespace {

host::HostSnapshot host_with_gpus(std::vector<std::string> bus_ids) {
  host::HostSnapshot h;
  h.pci = host::PciScan{};
  for (auto& id : bus_ids) {
    host::PciDevice d;
    d.bus_id = id;
    d.vendor = 0x10de;
    d.driver = "nvidia";
    h.pci->gpus.push_back(d);
  }
  return h;
}

nvml::GpuSnapshot nvml_with(std::vector<std::string> bus_ids) {
  nvml::GpuSnapshot s;
  s.available = true;
  s.system.device_count = static_cast<unsigned>(bus_ids.size());
  s.system.driver_version = "550.54.15";
  for (unsigned i = 0; i < bus_ids.size(); ++i) {
    nvml::GpuReading g;
    g.index = i;
    g.pci_bus_id = bus_ids[i];
    s.gpus.push_back(g);
  }
  return s;
}

TEST(Inventory, GpuOnBusButMissingFromNvmlFails) {
  auto v = judge_inventory(nvml_with({"0000:18:00.0"}),
                           host_with_gpus({"0000:18:00.0", "0000:2a:00.0"}));
  EXPECT_EQ(v.level, Level::kFail);
  EXPECT_EQ(v.reasons.at(0).text,
            "GPU at 0000:2a:00.0 is on the PCI bus but NVML does not list it (driver nvidia)");
}

TEST(Inventory, NoDriverAndNoGpuIsFine) {
  nvml::GpuSnapshot s;
  s.error_kind = "library_not_found";
  s.error = "NVML library not found";
  EXPECT_EQ(judge_inventory(s, host_with_gpus({})).level, Level::kOk);
  EXPECT_EQ(judge_inventory(s, host_with_gpus({"0000:18:00.0"})).level, Level::kFail);
}

TEST(Inventory, KernelModuleNewerThanLibraryFails) {
  auto h = host_with_gpus({"0000:18:00.0"});
  h.system.nvidia_driver_version = "550.90.07";
  auto v = judge_inventory(nvml_with({"0000:18:00.0"}), h);
  EXPECT_EQ(v.reasons.at(0).code, "driver_version_mismatch");
}

TEST(Inventory, ZeroGpusWarns) {
  EXPECT_EQ(judge_inventory(nvml_with({}), host_with_gpus({})).reasons.at(0).code, "zero_gpus");
}

TEST(HostVerdict, DStateInDriverFails) {
  host::HostSnapshot h;
  h.dstate_processes.push_back(
      {4242, "nvidia-smi", std::string("nv_wait_for_completion"), "nvidia-smi"});
  auto v = judge_host(h, nullptr);
  EXPECT_EQ(v.level, Level::kFail);
  EXPECT_EQ(v.reasons.at(0).code, "dstate_in_driver");
}

TEST(HostVerdict, FullDiskAndLowMemory) {
  host::HostSnapshot h;
  h.memory = host::MemInfo{};
  h.memory->total = 100;
  h.memory->available = 3;
  host::FilesystemUsage fs;
  fs.mount_point = "/data";
  fs.total = 1000;
  fs.free = 30;
  fs.available = 20;
  h.filesystems.push_back(fs);
  auto v = judge_host(h, nullptr);
  EXPECT_EQ(v.level, Level::kFail);
  EXPECT_EQ(v.reasons.at(0).code, "disk_full");
  EXPECT_EQ(v.reasons.at(1).code, "memory_low");
}

}  // namespace
}  // namespace cardiac::health

namespace cardiac::health {
namespace {

TEST(Inventory, GpusPassedToVirtualMachinesAreNotThisHostsGpus) {
  host::HostSnapshot h;
  h.pci = host::PciScan{};
  host::PciDevice d;
  d.bus_id = "0000:18:00.0";
  d.driver = "vfio-pci";
  h.pci->gpus.push_back(d);
  nvml::GpuSnapshot s;
  s.error_kind = "library_not_found";
  s.error = "NVML library not found";
  // A VM host without the NVIDIA driver is fine.
  EXPECT_EQ(judge_inventory(s, h).level, Level::kOk);
}

TEST(Inventory, GpuBoundToAnotherDriverIsNamed) {
  auto h = host_with_gpus({"0000:18:00.0", "0000:2a:00.0"});
  h.pci->gpus[1].driver = "nouveau";
  auto v = judge_inventory(nvml_with({"0000:18:00.0"}), h);
  EXPECT_EQ(v.reasons.at(0).code, "gpu_wrong_driver");
  EXPECT_EQ(v.reasons.at(0).text, "GPU at 0000:2a:00.0 is bound to nouveau instead of nvidia");
}

}  // namespace
}  // namespace cardiac::health

namespace cardiac::health {
namespace {

TEST(HostVerdict, FilesThatCouldNotBeReadAreNotOk) {
  host::HostSnapshot h;
  h.errors = {"/proc/loadavg line 1: empty", "/proc/uptime line 1: bad value 'x'"};
  auto v = judge_host(h, nullptr);
  EXPECT_EQ(v.level, Level::kWarn);
  ASSERT_EQ(v.reasons.size(), 2u);
  EXPECT_EQ(v.reasons[0].code, "host_read_error");
  EXPECT_EQ(v.reasons[0].text, "could not read /proc/loadavg line 1: empty");
  EXPECT_EQ(v.reasons[1].text, "could not read /proc/uptime line 1: bad value 'x'");
}

}  // namespace
}  // namespace cardiac::health
