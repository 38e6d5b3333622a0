// SPDX-License-Identifier: Apache-2.0
// The worker's one-line form of a GPU reading: every field survives the trip, absence stays
// absence, and a damaged line is refused with the token named.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "nvml/gpu_json.h"
#include "nvml/gpu_wire.h"

namespace cardiac::nvml {
namespace {

std::string wire(const GpuReading& g) {
  std::string out;
  append_wire(g, out);
  return out;
}

// Every scalar field set, each to a value of its own (bools alternate).
GpuReading full_reading() {
  GpuReading g;
  g.index = 7;
  g.health = DeviceHealth::kUnresponsive;
  g.health_detail = "nvmlDeviceGetTemperature did not return within 5s";
  g.sampled_at = 1'733'350'000'123'456'789;
  g.sample_duration_us = -12;  // signed: kept as it is
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-0c4f";
  g.serial = "-1654";  // a leading '-' is not "absent"
  g.pci_bus_id = "0000:3b:00.0";
  g.vbios_version = "96.00.99.00.01";
  unsigned n = 1;
#define CARDIAC_GPU_FIELD(member, ...)                                               \
  if constexpr (std::is_same_v<decltype(g.member)::value_type, bool>) {              \
    g.member = (n++ % 2) == 0;                                                       \
  } else {                                                                           \
    g.member = static_cast<decltype(g.member)::value_type>(1000 * n++ + 4000000000); \
  }
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  g.processes_supported = true;
  g.processes.push_back({42, std::nullopt, "python3 train.py", "compute"});
  g.processes.push_back({43, 1ull << 40, "", "graphics"});
  g.processes.push_back({44, 0, "100%\tdone\n\xc3\xa9-", "compute"});
  g.nvlinks.push_back({0, true, 4, 0, 1, std::nullopt, 2});
  g.nvlinks.push_back({17, false, std::nullopt, std::nullopt, std::nullopt, std::nullopt, 9});
  g.nvlinks[0].remote_pci_bus_id = "0000:3b:00.0";
  g.call_errors["nvmlDeviceGetFanSpeed"] = "NO_PERMISSION";
  g.call_errors["nvmlDeviceGetPowerUsage"] = "UNKNOWN";
  return g;
}

TEST(GpuWire, EveryFieldSurvivesTheTrip) {
  const GpuReading g = full_reading();
  const std::string line = wire(g);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find("  "), std::string::npos) << "no empty token: an empty string is %";
  auto back = gpu_reading_from_wire(line);
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(to_json(*back), to_json(g));
  EXPECT_EQ(back->sampled_at, g.sampled_at);
  EXPECT_EQ(back->sample_duration_us, -12);
  EXPECT_EQ(back->serial, "-1654");
  EXPECT_EQ(back->processes[1].name, "");
  EXPECT_EQ(back->processes[2].name, "100%\tdone\n\xc3\xa9-");
  EXPECT_FALSE(back->processes[0].used_memory_bytes);
  EXPECT_FALSE(back->nvlinks[1].version);
  EXPECT_EQ(back->nvlinks[0].remote_pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(back->nvlinks[1].remote_pci_bus_id, "");
}

TEST(GpuWire, AbsenceStaysAbsentAndZeroStaysZero) {
  GpuReading g;
  g.index = 0;
  g.temperature = 0;
  auto back = gpu_reading_from_wire(wire(g));
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(to_json(*back), to_json(g));
  ASSERT_TRUE(back->temperature);
  EXPECT_EQ(*back->temperature, 0u);
  EXPECT_FALSE(back->fan_speed);
  EXPECT_FALSE(back->processes_supported);
  EXPECT_TRUE(back->name.empty());
}

// Application clocks ride the line like every optional field: a value where NVML gave one,
// absence (not 0) where the GPU has none; JSON written before they were read still parses.
TEST(GpuWire, ApplicationClocksTravelAndTheirAbsenceToo) {
  GpuReading with;
  with.app_clock_graphics_mhz = 1755;
  with.app_clock_memory_mhz = 2619;
  with.default_app_clock_graphics_mhz = 1980;
  with.default_app_clock_memory_mhz = 2619;
  auto back = gpu_reading_from_wire(wire(with));
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->app_clock_graphics_mhz, 1755u);
  EXPECT_EQ(back->app_clock_memory_mhz, 2619u);
  EXPECT_EQ(back->default_app_clock_graphics_mhz, 1980u);
  EXPECT_EQ(back->default_app_clock_memory_mhz, 2619u);
  EXPECT_EQ(to_json(*back)["app_clock_graphics_mhz"], 1755);

  GpuReading without;
  without.clock_sm_max_mhz = 1980;
  back = gpu_reading_from_wire(wire(without));
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_FALSE(back->app_clock_graphics_mhz);
  EXPECT_FALSE(back->app_clock_memory_mhz);
  EXPECT_FALSE(back->default_app_clock_graphics_mhz);
  EXPECT_FALSE(back->default_app_clock_memory_mhz);
  EXPECT_FALSE(to_json(*back).contains("app_clock_graphics_mhz"));

  auto old = gpu_reading_from_json({{"index", 2}, {"clock_sm_max_mhz", 1980}});
  ASSERT_TRUE(old) << old.error().what();
  EXPECT_EQ(old->clock_sm_max_mhz, 1980u);
  EXPECT_FALSE(old->app_clock_graphics_mhz);
  EXPECT_FALSE(old->default_app_clock_memory_mhz);
}

TEST(GpuWire, DamagedLinesAreRefusedNamingTheToken) {
  const std::string line = wire(full_reading());
  EXPECT_FALSE(gpu_reading_from_wire(""));
  EXPECT_FALSE(gpu_reading_from_wire(line.substr(0, line.size() / 2)));
  EXPECT_FALSE(gpu_reading_from_wire(line + " 1"));  // a token left over

  auto bad_index = gpu_reading_from_wire("x" + line);
  ASSERT_FALSE(bad_index);
  EXPECT_NE(bad_index.error().what().find("index"), std::string::npos);

  GpuReading g;
  g.health_detail = "%";
  std::string escaped = wire(g);
  auto pos = escaped.find("%25");
  ASSERT_NE(pos, std::string::npos);
  auto bad_escape = gpu_reading_from_wire(escaped.replace(pos, 3, "%G5"));
  ASSERT_FALSE(bad_escape);
  EXPECT_NE(bad_escape.error().what().find("health_detail"), std::string::npos);

  auto melted = gpu_reading_from_wire("0 melted" + wire(GpuReading{}).substr(4));
  ASSERT_FALSE(melted);
  EXPECT_NE(melted.error().what().find("melted"), std::string::npos);
}

TEST(GpuWire, AHugeListLengthIsRefusedNotAllocated) {
  GpuReading g;
  g.nvlinks.push_back({});
  std::string line = wire(g);
  // The NVLink count is the token before the link's own: "… 1 0 0 - - - - - % 0".
  auto pos = line.rfind(" 1 0 0 - - - - - % 0");
  ASSERT_NE(pos, std::string::npos) << line;
  line.replace(pos, 2, " 99999999999");
  auto r = gpu_reading_from_wire(line);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("NVLink count"), std::string::npos) << r.error().what();
}

}  // namespace
}  // namespace cardiac::nvml
