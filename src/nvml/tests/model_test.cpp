// SPDX-License-Identifier: Apache-2.0
// The GPU data model helpers: bus ids, clock event reasons, JSON round trip.
#include <gtest/gtest.h>

#include "nvml/clock_events.h"
#include "nvml/gpu_json.h"
#include "nvml/pci.h"
#include "nvml/types.h"

namespace cardiac::nvml {
namespace {

TEST(PciBusId, NormalisesEveryForm) {
  EXPECT_EQ(normalize_pci_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id(" 0001:C1:1F.7\n"), "0001:c1:1f.7");
  EXPECT_EQ(normalize_pci_bus_id("garbage"), "garbage");
  EXPECT_EQ(normalize_pci_bus_id("0000:3b:40.0"), "0000:3b:40.0");  // device > 31: left alone
  EXPECT_EQ(normalize_pci_bus_id(""), "");
}

TEST(ClockEvents, DecodesNamesAndKeepsUnknownBits) {
  auto r = decode_clock_event_reasons(kReasonGpuIdle | kReasonHwThermalSlowdown | (1ull << 40));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "gpu_idle");
  EXPECT_EQ(r[1].name, "hw_thermal_slowdown");
  EXPECT_EQ(unknown_clock_event_bits(kReasonGpuIdle | (1ull << 40)), 1ull << 40);
  EXPECT_TRUE(decode_clock_event_reasons(0).empty());
}

TEST(GpuJson, RoundTripKeepsAbsenceAbsent) {
  GpuReading g;
  g.index = 3;
  g.health = DeviceHealth::kResetRequired;
  g.uuid = "GPU-1";
  g.temperature = 0;  // a real zero stays a zero
  g.processes_supported = true;
  g.processes.push_back({42, std::nullopt, "python", "compute"});
  g.nvlinks.push_back({0, true, 4, 0, 1, std::nullopt, 2});
  g.nvlinks[0].remote_pci_bus_id = "0000:3b:00.0";
  g.processes.push_back({43, std::nullopt, "train", "compute"});
  g.processes[1].job = "123";
  g.processes[1].job_source = "slurm";
  g.processes[1].job_from = "cgroup";
  g.processes.push_back({44, std::nullopt, "", "compute"});
  g.processes[2].job_note = "/proc/44/environ: permission denied";
  g.call_errors["nvmlDeviceGetFanSpeed"] = "NO_PERMISSION";
  auto j = to_json(g);
  EXPECT_FALSE(j["processes"][0].contains("job"));
  EXPECT_EQ(j["processes"][1]["job"], "123");
  EXPECT_EQ(j["processes"][2]["job_note"], "/proc/44/environ: permission denied");
  EXPECT_EQ(j["nvlinks"][0]["remote_pci_bus_id"], "0000:3b:00.0");
  EXPECT_FALSE(j.contains("fan_speed"));
  EXPECT_EQ(j["temperature"], 0);
  auto back = gpu_reading_from_json(j);
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(to_json(*back), j);
  EXPECT_FALSE(back->fan_speed);
  EXPECT_EQ(back->health, DeviceHealth::kResetRequired);
  EXPECT_FALSE(back->processes[0].used_memory_bytes);
}

TEST(GpuJson, MalformedInputNamesTheKey) {
  auto bad = gpu_reading_from_json(nlohmann::json{{"index", 0}, {"temperature", "hot"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("temperature"), std::string::npos);
  EXPECT_FALSE(gpu_reading_from_json(nlohmann::json::array()));
  EXPECT_FALSE(gpu_reading_from_json(nlohmann::json{{"health", "ok"}}));  // no index
  EXPECT_FALSE(gpu_reading_from_json(nlohmann::json{{"index", 0}, {"health", "melted"}}));
}

}  // namespace
}  // namespace cardiac::nvml
