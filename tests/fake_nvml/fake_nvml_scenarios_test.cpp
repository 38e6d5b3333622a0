// SPDX-License-Identifier: Apache-2.0
// The scenario fixtures under tests/fixtures/scenarios load and say what their names promise.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "support.h"

namespace fake_test {
namespace {

TEST(FakeNvmlScenarios, EveryFixtureLoads) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FAKE_NVML_SCENARIOS_DIR)) {
    const std::string path = entry.path().string();
    nvmlReturn_t expected = ReturnCode::kSuccess;
    if (entry.path().extension() == ".json") {
      auto doc = nlohmann::json::parse(std::ifstream(path), nullptr, true, true);
      const std::string init = doc.value("init_return", "SUCCESS");
      if (init == "DRIVER_NOT_LOADED") expected = ReturnCode::kDriverNotLoaded;
      if (init == "LIB_RM_VERSION_MISMATCH") expected = ReturnCode::kLibRmVersionMismatch;
      if (init == "NO_PERMISSION") expected = ReturnCode::kNoPermission;
    } else if (entry.path().extension() != ".toml") {
      continue;
    }
    Session session(path);
    EXPECT_EQ(session.rc(), expected) << path;
    ++seen;
  }
  EXPECT_GE(seen, 12);
}

TEST(FakeNvmlScenarios, FailedInitLeavesTheLibraryUninitialized) {
  Session session(scenario("driver-not-loaded.json"));
  ASSERT_EQ(session.rc(), ReturnCode::kDriverNotLoaded);
  unsigned count = 0;
  EXPECT_EQ(api().device_count(&count), ReturnCode::kUninitialized);
}

TEST(FakeNvmlScenarios, HealthyIdentityPciAndMemory) {
  Session session(scenario("healthy-8xh100.json"));
  ASSERT_EQ(session.rc(), ReturnCode::kSuccess);
  unsigned count = 0;
  ASSERT_EQ(api().device_count(&count), ReturnCode::kSuccess);
  ASSERT_EQ(count, 8u);
  nvmlDevice_t d = session.device(3);
  char text[96] = {};
  ASSERT_EQ(api().name(d, text, sizeof text), ReturnCode::kSuccess);
  EXPECT_STREQ(text, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(api().name(d, text, 8), ReturnCode::kInsufficientSize);
  ASSERT_EQ(api().uuid(d, text, sizeof text), ReturnCode::kSuccess);
  EXPECT_EQ(std::string(text).rfind("GPU-", 0), 0u);
  EXPECT_EQ(std::strlen(text), 40u);
  unsigned index = 0;
  ASSERT_EQ(api().index(d, &index), ReturnCode::kSuccess);
  EXPECT_EQ(index, 3u);

  nvmlPciInfo_t pci{};
  ASSERT_EQ(api().pci_info(d, &pci), ReturnCode::kSuccess);
  EXPECT_STREQ(pci.busId, "00000000:5D:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:5D:00.0");
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0x5Du);
  EXPECT_EQ(pci.device, 0u);
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu);

  nvmlMemory_v2_t v2{};
  v2.version = cardiac::nvml::kNvmlMemoryV2Version;
  ASSERT_EQ(api().memory_v2(d, &v2), ReturnCode::kSuccess);
  EXPECT_EQ(v2.total, 85520809984ull);
  EXPECT_EQ(v2.total, v2.used + v2.free + v2.reserved);
  nvmlMemory_t v1{};
  ASSERT_EQ(api().memory(d, &v1), ReturnCode::kSuccess);
  EXPECT_EQ(v1.used, v2.used + v2.reserved);
  EXPECT_EQ(v1.free, v2.free);
  v2.version = 1;
  EXPECT_EQ(api().memory_v2(d, &v2), ReturnCode::kArgumentVersionMismatch);

  unsigned active = 0, mode = 0, pending = 0;
  ASSERT_EQ(api().nvlink_state(d, 17, &active), ReturnCode::kSuccess);
  EXPECT_EQ(active, 1u);
  EXPECT_EQ(api().nvlink_state(d, 18, &active), ReturnCode::kInvalidArgument);
  ASSERT_EQ(api().ecc_mode(d, &mode, &pending), ReturnCode::kSuccess);
  EXPECT_EQ(mode, 1u);
  // Hopper has row remapping instead of page retirement.
  unsigned pages = 0;
  EXPECT_EQ(api().retired_pages(d, 0, &pages, nullptr), ReturnCode::kNotSupported);
  // SXM boards have no fan.
  EXPECT_EQ(api().fan_speed(d, &mode), ReturnCode::kNotSupported);
  unsigned long long reasons = 0;
  ASSERT_EQ(api().clocks_event_reasons(session.device(6), &reasons), ReturnCode::kSuccess);
  EXPECT_EQ(reasons, 1u);  // idle

  // Application clocks at the H100's defaults: graphics and memory, each call its own key.
  unsigned mhz = 0;
  ASSERT_EQ(api().applications_clock(d, cardiac::nvml::kClockGraphics, &mhz), ReturnCode::kSuccess);
  EXPECT_EQ(mhz, 1980u);
  ASSERT_EQ(api().applications_clock(d, cardiac::nvml::kClockMem, &mhz), ReturnCode::kSuccess);
  EXPECT_EQ(mhz, 2619u);
  ASSERT_EQ(api().default_applications_clock(d, cardiac::nvml::kClockGraphics, &mhz),
            ReturnCode::kSuccess);
  EXPECT_EQ(mhz, 1980u);
  ASSERT_EQ(api().default_applications_clock(d, cardiac::nvml::kClockMem, &mhz),
            ReturnCode::kSuccess);
  EXPECT_EQ(mhz, 2619u);
  EXPECT_EQ(api().applications_clock(d, cardiac::nvml::kClockSm, &mhz), ReturnCode::kNotSupported);
  EXPECT_EQ(api().default_applications_clock(d, 7, &mhz), ReturnCode::kInvalidArgument);
  EXPECT_EQ(api().applications_clock(d, cardiac::nvml::kClockGraphics, nullptr),
            ReturnCode::kInvalidArgument);
}

TEST(FakeNvmlScenarios, LostGpuKeepsItsHandle) {
  Session session(scenario("gpu-lost.json"));
  nvmlDevice_t lost = session.device(5);
  ASSERT_NE(lost, nullptr);
  char name[96] = {};
  EXPECT_EQ(api().name(lost, name, sizeof name), ReturnCode::kGpuIsLost);
  unsigned temp = 0;
  EXPECT_EQ(api().temperature(lost, 0, &temp), ReturnCode::kGpuIsLost);
  EXPECT_EQ(api().temperature(session.device(4), 0, &temp), ReturnCode::kSuccess);
}

TEST(FakeNvmlScenarios, ResetRequired) {
  Session session(scenario("reset-required.json"));
  unsigned temp = 0;
  EXPECT_EQ(api().temperature(session.device(3), 0, &temp), ReturnCode::kResetRequired);
}

TEST(FakeNvmlScenarios, ConsumerGpuFromToml) {
  Session session(scenario("consumer-gpu.toml"));
  ASSERT_EQ(session.rc(), ReturnCode::kSuccess);
  nvmlDevice_t d = session.device(0);
  char text[96] = {};
  ASSERT_EQ(api().name(d, text, sizeof text), ReturnCode::kSuccess);
  EXPECT_STREQ(text, "NVIDIA GeForce RTX 3080");
  EXPECT_EQ(api().serial(d, text, sizeof text), ReturnCode::kNotSupported);
  unsigned a = 0, b = 0, c = 0, e = 0;
  EXPECT_EQ(api().ecc_mode(d, &a, &b), ReturnCode::kNotSupported);
  EXPECT_EQ(api().remapped_rows(d, &a, &b, &c, &e), ReturnCode::kNotSupported);
  EXPECT_EQ(api().nvlink_state(d, 0, &a), ReturnCode::kNotSupported);
  unsigned long long energy = 0;
  EXPECT_EQ(api().total_energy(d, &energy), ReturnCode::kNotSupported);
  ASSERT_EQ(api().fan_speed(d, &a), ReturnCode::kSuccess);
  EXPECT_EQ(a, 38u);
  // GeForce boards have no application clocks: the keys are absent.
  EXPECT_EQ(api().applications_clock(d, cardiac::nvml::kClockGraphics, &a),
            ReturnCode::kNotSupported);
  EXPECT_EQ(api().default_applications_clock(d, cardiac::nvml::kClockMem, &a),
            ReturnCode::kNotSupported);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(api().pci_info(d, &pci), ReturnCode::kSuccess);
  EXPECT_EQ(pci.pciDeviceId, 0x220610DEu);
  nvmlProcessInfo_t infos[2] = {};
  unsigned n = 2;
  ASSERT_EQ(api().compute_processes(d, &n, infos), ReturnCode::kSuccess);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].usedGpuMemory, ~0ull);
}

TEST(FakeNvmlScenarios, ThermalThrottleClearsOnTheTimeline) {
  unsigned temp = 0;
  unsigned long long reasons = 0;
  {
    Session start(scenario("thermal-throttle.json"), 0.0);
    ASSERT_EQ(api().temperature(start.device(1), 0, &temp), ReturnCode::kSuccess);
    EXPECT_EQ(temp, 88u);
    ASSERT_EQ(api().clocks_event_reasons(start.device(1), &reasons), ReturnCode::kSuccess);
    EXPECT_EQ(reasons, 0x48u);
  }
  Session later(scenario("thermal-throttle.json"), 700.0);
  ASSERT_EQ(api().temperature(later.device(1), 0, &temp), ReturnCode::kSuccess);
  EXPECT_EQ(temp, 70u);
  auto* throttle =
      Fake::get().sym<Api::clocks_event_reasons_fn>("nvmlDeviceGetCurrentClocksThrottleReasons");
  ASSERT_EQ(throttle(later.device(1), &reasons), ReturnCode::kSuccess);
  EXPECT_EQ(reasons, 0u);
}

TEST(FakeNvmlScenarios, EccDoubleBitErrorEvents) {
  Session session(scenario("ecc-dbe.json"), 10.0);
  nvmlDevice_t d = session.device(2);
  unsigned long long count = 0;
  ASSERT_EQ(api().total_ecc_errors(d, 1, 0, &count), ReturnCode::kSuccess);
  EXPECT_EQ(count, 2u);
  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  ASSERT_EQ(api().remapped_rows(d, &corrected, &uncorrected, &pending, &failure),
            ReturnCode::kSuccess);
  EXPECT_EQ(uncorrected, 1u);
  EXPECT_EQ(pending, 1u);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api().event_set_create(&set), ReturnCode::kSuccess);
  for (unsigned i = 0; i < 8; ++i) {
    ASSERT_EQ(api().register_events(session.device(i), 0x8 | 0x2, set), ReturnCode::kSuccess);
  }
  std::vector<unsigned long long> xids;
  nvmlEventData_t data{};
  while (api().event_set_wait(set, &data, 0) == ReturnCode::kSuccess) {
    EXPECT_EQ(data.device, d);
    if (data.eventType == 0x8) xids.push_back(data.eventData);
  }
  EXPECT_EQ(xids, (std::vector<unsigned long long>{48, 63}));
  EXPECT_EQ(api().event_set_free(set), ReturnCode::kSuccess);
}

TEST(FakeNvmlScenarios, PcieDegradedReplaysRise) {
  unsigned replays_start = 0, replays_later = 0, gen = 0, width = 0;
  {
    Session start(scenario("pcie-degraded.json"), 0.0);
    ASSERT_EQ(api().pcie_replay_counter(start.device(4), &replays_start), ReturnCode::kSuccess);
    ASSERT_EQ(api().pcie_gen_current(start.device(4), &gen), ReturnCode::kSuccess);
    ASSERT_EQ(api().pcie_width_current(start.device(4), &width), ReturnCode::kSuccess);
  }
  EXPECT_EQ(gen, 3u);
  EXPECT_EQ(width, 8u);
  Session later(scenario("pcie-degraded.json"), 200.0);
  ASSERT_EQ(api().pcie_replay_counter(later.device(4), &replays_later), ReturnCode::kSuccess);
  EXPECT_GT(replays_later, replays_start);
}

TEST(FakeNvmlScenarios, ZeroGpus) {
  Session session(scenario("zero-gpus.json"));
  unsigned count = 1;
  ASSERT_EQ(api().device_count(&count), ReturnCode::kSuccess);
  EXPECT_EQ(count, 0u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(api().handle_by_index(0, &d), ReturnCode::kInvalidArgument);
}

TEST(FakeNvmlScenarios, HangTargetsOneCallOnOneGpu) {
  // Only the contract that does not need waiting: other devices and calls answer at once.
  Session session(scenario("hang.json"));
  unsigned temp = 0;
  EXPECT_EQ(api().temperature(session.device(2), 0, &temp), ReturnCode::kSuccess);
  char name[96] = {};
  EXPECT_EQ(api().name(session.device(3), name, sizeof name), ReturnCode::kSuccess);
}

}  // namespace
}  // namespace fake_test
