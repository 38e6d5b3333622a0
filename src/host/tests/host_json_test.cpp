// SPDX-License-Identifier: Apache-2.0
// Tests for the JSON form of host snapshots.
#include "host/host_json.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

constexpr TimeNs kJsonT0 = 1'700'000'000LL * kNsPerSec;

TEST(HostJson, AbsentValuesAreOmitted) {
  HostSnapshot s;
  s.taken_at = kJsonT0;
  MemInfo m;
  m.total = 1024;
  s.memory = m;
  auto j = to_json(s, nullptr);
  EXPECT_EQ(j["taken_at"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(j["taken_at_ns"], kJsonT0);
  EXPECT_EQ(j["memory"]["total_bytes"], 1024);
  EXPECT_FALSE(j["memory"].contains("available_bytes"));
  EXPECT_FALSE(j.contains("cpu"));
  EXPECT_FALSE(j.contains("load"));
  EXPECT_FALSE(j.contains("pressure"));
  EXPECT_FALSE(j.contains("pci"));
  EXPECT_FALSE(j.contains("interval_s"));
  EXPECT_FALSE(j["system"].contains("kernel"));
  EXPECT_EQ(j["system"]["nvidia_module_loaded"], false);
  EXPECT_TRUE(j["errors"].is_array());
}

TEST(HostJson, RatesMergedAndRounded) {
  HostSnapshot s;
  s.taken_at = kJsonT0;
  CpuStat c;
  c.cores.push_back(CoreTimes{0, {}});
  s.cpu = c;
  DiskStat d;
  d.name = "nvme0n1";
  d.read_sectors = 2;
  s.disks.push_back(d);
  NetDevice n;
  n.name = "eth0";
  s.nics.push_back(n);
  HostRates r;
  r.interval_s = 1.0;
  CpuUsage u;
  u.user = 33.333;
  u.idle = 21.666;
  u.iowait = 45.04;
  u.busy = 33.3333;
  r.cpu.total = u;
  r.cpu.cores.push_back(CoreUsage{0, u});
  DiskRates dr;
  dr.name = "nvme0n1";
  dr.read_bytes_per_s = 314572800.4;
  dr.util_percent = 98.46;
  dr.await_ms = 11.8524;
  r.disks.push_back(dr);
  NetRates nr;
  nr.name = "eth0";
  nr.rx_bytes_per_s = 10.6;
  r.nics.push_back(nr);
  auto j = to_json(s, &r);
  EXPECT_DOUBLE_EQ(j["cpu"]["usage"]["user_pct"].get<double>(), 33.3);
  EXPECT_DOUBLE_EQ(j["cpu"]["usage"]["iowait_pct"].get<double>(), 45.0);
  EXPECT_FALSE(j["cpu"]["usage"].contains("steal_pct"));
  EXPECT_EQ(j["cpu"]["per_core"][0]["cpu"], 0);
  EXPECT_EQ(j["cpu"]["cores"], 1);
  EXPECT_EQ(j["disks"][0]["read_bytes"], 1024);
  EXPECT_EQ(j["disks"][0]["read_bytes_per_s"], 314572800);
  EXPECT_DOUBLE_EQ(j["disks"][0]["util_pct"].get<double>(), 98.5);
  EXPECT_DOUBLE_EQ(j["disks"][0]["await_ms"].get<double>(), 11.85);
  EXPECT_EQ(j["nics"][0]["rx_bytes_per_s"], 11);
  EXPECT_FALSE(j["nics"][0].contains("rx_util_pct"));
  EXPECT_FALSE(j["nics"][0].contains("speed_mbps"));
}

TEST(HostJson, InvalidUtf8IsReplacedSoDumpNeverThrows) {
  HostSnapshot s;
  s.dstate_processes.push_back(
      DStateProcess{7, std::string("bad\xff\xfe"), std::nullopt, std::string("a\xc3")});
  s.errors.push_back("x \xe2\x82");
  auto j = to_json(s, nullptr);
  std::string out;
  ASSERT_NO_THROW(out = j.dump());
  EXPECT_EQ(j["dstate_processes"][0]["comm"], "bad\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(j["dstate_processes"][0].contains("wchan"));
  EXPECT_EQ(j["dstate_processes"][0]["cmdline"], "a\xEF\xBF\xBD");
}

TEST(HostJson, PciHexAndGeneration) {
  HostSnapshot s;
  PciScan p;
  PciDevice g;
  g.bus_id = "0000:18:00.0";
  g.vendor = 0x10de;
  g.device = 0x2330;
  g.class_code = 0x030200;
  g.driver = "nvidia";
  g.current_link_gts = 32.0;
  g.current_link_width = 16;
  p.gpus.push_back(g);
  p.other_nvidia_functions = 4;
  s.pci = p;
  auto j = to_json(s, nullptr);
  const auto& gj = j["pci"]["nvidia_gpus"][0];
  EXPECT_EQ(gj["device_id"], "0x2330");
  EXPECT_EQ(gj["class"], "0x030200");
  EXPECT_EQ(gj["current_link_gen"], 5);
  EXPECT_FALSE(gj.contains("max_link_gts"));
  EXPECT_EQ(j["pci"]["other_nvidia_functions"], 4);
}

}  // namespace
}  // namespace cardiac::host
