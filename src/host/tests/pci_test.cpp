// SPDX-License-Identifier: Apache-2.0
// Tests for the PCI scan of NVIDIA functions.
#include "host/pci.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

void add_function(MemFs& fs, const std::string& bdf, const char* vendor, const char* device,
                  const char* cls) {
  const std::string d = "/sys/bus/pci/devices/" + bdf;
  fs.add_file(d + "/vendor", std::string(vendor) + "\n");
  fs.add_file(d + "/device", std::string(device) + "\n");
  fs.add_file(d + "/class", std::string(cls) + "\n");
}

TEST(HostPci, HexIds) {
  EXPECT_EQ(parse_pci_hex("0x10de\n").value(), 0x10deu);
  EXPECT_EQ(parse_pci_hex("0x030200").value(), 0x030200u);
  EXPECT_FALSE(parse_pci_hex(""));
  EXPECT_FALSE(parse_pci_hex("10de"));
  EXPECT_FALSE(parse_pci_hex("0x"));
  EXPECT_FALSE(parse_pci_hex("0xzz"));
  EXPECT_FALSE(parse_pci_hex("0x1234567890"));
}

TEST(HostPci, LinkSpeedAndGeneration) {
  EXPECT_EQ(parse_pci_link_speed("32.0 GT/s PCIe\n"), 32.0);
  EXPECT_EQ(parse_pci_link_speed("8 GT/s"), 8.0);
  EXPECT_EQ(parse_pci_link_speed("2.5 GT/s PCIe"), 2.5);
  EXPECT_FALSE(parse_pci_link_speed("Unknown speed"));
  EXPECT_FALSE(parse_pci_link_speed(""));
  EXPECT_FALSE(parse_pci_link_speed("fast GT/s"));
  EXPECT_EQ(pcie_generation(2.5), 1);
  EXPECT_EQ(pcie_generation(16.0), 4);
  EXPECT_EQ(pcie_generation(32.0), 5);
  EXPECT_FALSE(pcie_generation(7.0));
}

TEST(HostPci, GpuClasses) {
  EXPECT_TRUE(is_gpu_class(0x030000));
  EXPECT_TRUE(is_gpu_class(0x030200));
  EXPECT_FALSE(is_gpu_class(0x040300));  // HD audio
  EXPECT_FALSE(is_gpu_class(0x068000));  // NVSwitch
  EXPECT_FALSE(is_gpu_class(0x0c0330));  // USB on Turing cards
}

TEST(HostPci, ScanKeepsNvidiaGpusAndCountsOtherFunctions) {
  MemFs fs;
  add_function(fs, "0000:3b:00.0", "0x10de", "0x2330", "0x030200");
  add_function(fs, "0000:18:00.0", "0x10de", "0x2330", "0x030200");
  add_function(fs, "0000:18:00.1", "0x10de", "0x10f8", "0x040300");
  add_function(fs, "0000:05:00.0", "0x10de", "0x22a3", "0x068000");
  add_function(fs, "0000:00:00.0", "0x8086", "0x0d57", "0x060000");
  add_function(fs, "0000:4b:00.0", "0x8086", "0x159b", "0x020000");
  const std::string d = "/sys/bus/pci/devices/0000:18:00.0";
  fs.add_link(d + "/driver", "../../../bus/pci/drivers/nvidia");
  fs.add_file(d + "/current_link_speed", "16.0 GT/s PCIe\n");
  fs.add_file(d + "/max_link_speed", "32.0 GT/s PCIe\n");
  fs.add_file(d + "/current_link_width", "8\n");
  fs.add_file(d + "/max_link_width", "16\n");
  fs.add_file(d + "/numa_node", "1\n");
  fs.add_file("/sys/bus/pci/devices/0000:3b:00.0/numa_node", "-1\n");  // none known
  auto scan = collect_nvidia_pci(fs);
  ASSERT_TRUE(scan) << scan.error().what();
  ASSERT_EQ(scan->gpus.size(), 2u);
  EXPECT_EQ(scan->other_nvidia_functions, 2u);
  const PciDevice& g = scan->gpus[0];
  EXPECT_EQ(g.bus_id, "0000:18:00.0");
  EXPECT_EQ(g.device, 0x2330u);
  EXPECT_EQ(g.class_code, 0x030200u);
  EXPECT_EQ(g.driver, "nvidia");
  EXPECT_EQ(g.current_link_gts, 16.0);
  EXPECT_EQ(g.max_link_gts, 32.0);
  EXPECT_EQ(g.current_link_width, 8u);
  EXPECT_EQ(g.max_link_width, 16u);
  EXPECT_EQ(g.numa_node, 1);
  const PciDevice& unbound = scan->gpus[1];
  EXPECT_FALSE(unbound.numa_node);
  EXPECT_EQ(unbound.bus_id, "0000:3b:00.0");
  EXPECT_FALSE(unbound.driver);
  EXPECT_FALSE(unbound.current_link_gts);
  EXPECT_FALSE(unbound.max_link_width);
}

TEST(HostPci, GarbageAttributesAreSkippedOrAbsent) {
  MemFs fs;
  add_function(fs, "0000:18:00.0", "garbage", "0x2330", "0x030200");
  add_function(fs, "0000:2a:00.0", "0x10de", "0x2330", "\xff\xfe");
  add_function(fs, "0000:3a:00.0", "0x10de", "0x2330", "0x030200");
  fs.add_file("/sys/bus/pci/devices/0000:3a:00.0/current_link_width", "lots\n");
  fs.add_file("/sys/bus/pci/devices/0000:3a:00.0/current_link_speed", "Unknown\n");
  fs.add_file("/sys/bus/pci/devices/0000:3a:00.0/numa_node", "zero\n");
  auto scan = collect_nvidia_pci(fs);
  ASSERT_TRUE(scan);
  ASSERT_EQ(scan->gpus.size(), 1u);
  EXPECT_EQ(scan->gpus[0].bus_id, "0000:3a:00.0");
  EXPECT_FALSE(scan->gpus[0].current_link_width);
  EXPECT_FALSE(scan->gpus[0].current_link_gts);
  EXPECT_FALSE(scan->gpus[0].numa_node);
}

TEST(HostPci, NoBusIsNotFound) {
  MemFs fs;
  auto scan = collect_nvidia_pci(fs);
  ASSERT_FALSE(scan);
  EXPECT_EQ(scan.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace cardiac::host
