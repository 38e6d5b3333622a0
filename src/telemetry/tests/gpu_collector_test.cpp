// SPDX-License-Identifier: Apache-2.0
// The NVML worker and collector against the fake libnvidia-ml: every scenario, lost and
// unsupported values, init failures, and the hang that must not block the caller.
#include <gtest/gtest.h>
#include <signal.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nvml/gpu_json.h"
#include "telemetry/tests/support.h"

namespace cardiac::telemetry {
namespace {

using testing::fake_options;
using testing::load_scenario;
using testing::scenario_path;
using testing::TempScenario;

nvml::GpuSnapshot sample_scenario(const std::string& name, DurationNs timeout = 5 * kNsPerSec) {
  ManualClock clock;
  GpuCollector c(fake_options(scenario_path(name), timeout), clock);
  return c.sample();
}

TEST(GpuCollector, HealthyScenarioMatchesTheScenarioFile) {
  auto snap = sample_scenario("healthy-8xh100.json");
  ASSERT_TRUE(snap.available) << snap.error;
  auto scenario = load_scenario("healthy-8xh100.json");
  EXPECT_EQ(snap.system.driver_version, scenario["driver_version"]);
  EXPECT_EQ(snap.system.cuda_driver_version, scenario["cuda_driver_version"].get<int>());
  ASSERT_EQ(snap.gpus.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    const auto& g = snap.gpus[i];
    const auto& d = scenario["devices"][i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.health, nvml::DeviceHealth::kOk);
    EXPECT_EQ(g.name, d["name"]);
    EXPECT_EQ(g.uuid, d["uuid"]);
    EXPECT_EQ(g.memory_total, d["memory_total"].get<std::uint64_t>());
    EXPECT_EQ(g.memory_reserved, d["memory_reserved"].get<std::uint64_t>());
    EXPECT_EQ(g.temperature, d["temperature"].get<unsigned>());
    EXPECT_EQ(g.temperature_slowdown, d["temperature_slowdown"].get<unsigned>());
    EXPECT_EQ(g.power_usage_mw, d["power_usage_mw"].get<unsigned>());
    EXPECT_EQ(g.pcie_width_max, d["pcie_width_max"].get<unsigned>());
    EXPECT_EQ(g.nvlinks.size(), d["nvlinks"].size());
    EXPECT_EQ(g.processes.size(), d["processes"].size());
  }
  // NVML's 8-digit domain is normalised to the kernel's form.
  EXPECT_EQ(snap.gpus[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(snap.gpus[7].pci_bus_id, "0000:db:00.0");
}

TEST(GpuCollector, EveryScenarioFileLoads) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios")) {
    std::string name = entry.path().filename();
    if (name == "hang.json") continue;  // covered below with a short deadline
    auto snap = sample_scenario(name);
    if (snap.available) {
      EXPECT_EQ(snap.gpus.size(), snap.system.device_count) << name;
    } else {
      EXPECT_FALSE(snap.error.empty()) << name;
      EXPECT_NE(snap.error_kind, "worker_failed") << name << ": " << snap.error;
    }
  }
}

TEST(GpuCollector, LostGpuBecomesItsHealthAndOthersAreRead) {
  auto snap = sample_scenario("gpu-lost.json");
  ASSERT_TRUE(snap.available);
  ASSERT_EQ(snap.gpus.size(), 8u);
  EXPECT_EQ(snap.gpus[5].health, nvml::DeviceHealth::kLost);
  EXPECT_NE(snap.gpus[5].health_detail.find("GPU_IS_LOST"), std::string::npos);
  EXPECT_FALSE(snap.gpus[5].temperature);
  EXPECT_EQ(snap.gpus[4].health, nvml::DeviceHealth::kOk);
  EXPECT_EQ(snap.gpus[6].health, nvml::DeviceHealth::kOk);
}

TEST(GpuCollector, NotSupportedIsAbsentNeverZero) {
  auto snap = sample_scenario("consumer-gpu.toml");
  ASSERT_TRUE(snap.available) << snap.error;
  ASSERT_EQ(snap.gpus.size(), 1u);
  const auto& g = snap.gpus[0];
  EXPECT_EQ(g.health, nvml::DeviceHealth::kOk);
  EXPECT_FALSE(g.ecc_volatile_uncorrected);
  EXPECT_FALSE(g.remapped_rows_pending);
  EXPECT_FALSE(g.retired_pages_dbe);
  EXPECT_TRUE(g.nvlinks.empty());
  EXPECT_TRUE(g.serial.empty());
  EXPECT_TRUE(g.fan_speed);
  auto j = nvml::to_json(g);
  EXPECT_FALSE(j.contains("ecc_volatile_uncorrected"));
  EXPECT_FALSE(j.contains("energy_mj"));
  ASSERT_FALSE(g.processes.empty());
  EXPECT_FALSE(g.processes[0].used_memory_bytes);
}

TEST(GpuCollector, InitFailuresAreNamed) {
  EXPECT_EQ(sample_scenario("driver-not-loaded.json").error_kind, "driver_not_loaded");
  EXPECT_EQ(sample_scenario("version-mismatch.json").error_kind, "version_mismatch");
  EXPECT_EQ(sample_scenario("no-permission.json").error_kind, "no_permission");
  auto zero = sample_scenario("zero-gpus.json");
  EXPECT_TRUE(zero.available);
  EXPECT_EQ(zero.system.device_count, 0u);
}

TEST(GpuCollector, ANamedLibraryThatCannotLoadIsUnusableWithTheReason) {
  ManualClock clock;
  auto o = fake_options(scenario_path("healthy-8xh100.json"), 5 * kNsPerSec);
  o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
  GpuCollector c(o, clock);
  auto snap = c.sample();
  EXPECT_FALSE(snap.available);
  // Not "library_not_found": that means no driver, a normal state; this is a bad setting.
  EXPECT_EQ(snap.error_kind, "library_unusable");
  EXPECT_NE(snap.error.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(snap.error.find("No such file"), std::string::npos) << snap.error;
}

// A worker of another build (an agent running across an upgrade restarts its worker from the
// new file) lays its readings out differently: refused with the reason, not misread.
TEST(GpuCollector, AWorkerOfAnotherBuildIsRefused) {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("cardiac-old-worker-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string worker = dir + "/cardiac-nvml-worker";
  std::ofstream(worker) << "#!/bin/sh\n"
                           "echo '{\"type\":\"hello\",\"ok\":true,\"wire\":\"0000000000000000\","
                           "\"system\":{}}'\n"
                           "exec cat >/dev/null\n";
  std::filesystem::permissions(worker, std::filesystem::perms::owner_all);
  ManualClock clock;
  auto o = fake_options(scenario_path("healthy-8xh100.json"), 5 * kNsPerSec);
  o.executable = worker;
  GpuCollector c(o, clock);
  auto snap = c.sample();
  EXPECT_FALSE(snap.available);
  EXPECT_EQ(snap.error_kind, "worker_failed");
  EXPECT_NE(snap.error.find("another build"), std::string::npos) << snap.error;
  EXPECT_NE(snap.error.find(worker), std::string::npos) << snap.error;
  std::filesystem::remove_all(dir);

  // The real worker of this build says the same layout.
  GpuCollector same(fake_options(scenario_path("healthy-8xh100.json"), 5 * kNsPerSec), clock);
  EXPECT_TRUE(same.sample().available);
}

TEST(GpuCollector, HungCallMarksOnlyThatGpuAndReadsTheRest) {
  ManualClock clock;
  GpuCollector c(fake_options(scenario_path("hang.json"), 300 * kNsPerMs), clock);
  auto snap = c.sample();
  ASSERT_TRUE(snap.available);
  ASSERT_EQ(snap.gpus.size(), 8u);
  EXPECT_EQ(snap.gpus[3].health, nvml::DeviceHealth::kUnresponsive);
  EXPECT_NE(snap.gpus[3].health_detail.find("nvmlDeviceGetTemperature"), std::string::npos);
  for (unsigned i : {0u, 1u, 2u, 4u, 5u, 6u, 7u}) {
    EXPECT_EQ(snap.gpus[i].health, nvml::DeviceHealth::kOk) << i;
  }
  EXPECT_EQ(c.stats().timeouts, 1u);
  EXPECT_EQ(c.stats().worker_restarts, 1u);

  // Until its retry time the wedged GPU is not asked again, so no new timeout happens.
  auto again = c.sample();
  EXPECT_EQ(again.gpus[3].health, nvml::DeviceHealth::kUnresponsive);
  EXPECT_EQ(c.stats().timeouts, 1u);
  EXPECT_EQ(again.gpus[2].health, nvml::DeviceHealth::kOk);
}

TEST(GpuCollector, WedgedGpuIsProbedAgainAfterBackoffAndRecovers) {
  auto scenario = load_scenario("hang.json");
  TempScenario file(scenario);
  ManualClock clock;
  GpuCollector c(fake_options(file.path(), 300 * kNsPerMs), clock);
  EXPECT_EQ(c.sample().gpus[3].health, nvml::DeviceHealth::kUnresponsive);

  scenario.erase("hangs");  // the driver recovers
  file.write(scenario);
  clock.advance(31 * kNsPerSec);  // past the first backoff (30 s)
  auto snap = c.sample();
  EXPECT_EQ(snap.gpus[3].health, nvml::DeviceHealth::kOk) << snap.gpus[3].health_detail;
  EXPECT_EQ(c.stats().timeouts, 1u);
}

TEST(GpuCollector, HungInitIsUnresponsiveNotAHang) {
  auto scenario = load_scenario("healthy-8xh100.json");
  scenario["hangs"] = {{{"function", "nvmlInit"}, {"seconds", 60}}};
  TempScenario file(scenario);
  ManualClock clock;
  GpuCollector c(fake_options(file.path(), 300 * kNsPerMs), clock);
  auto snap = c.sample();
  EXPECT_FALSE(snap.available);
  EXPECT_EQ(snap.error_kind, "unresponsive");
  EXPECT_NE(snap.error.find("nvmlInit"), std::string::npos);
  // Within the backoff the collector does not start another worker.
  auto again = c.sample();
  EXPECT_EQ(again.error_kind, "unresponsive");
  EXPECT_EQ(c.stats().worker_starts, 1u);
}

TEST(GpuCollector, ScenarioChangesAreSeenByTheLongLivedWorker) {
  auto scenario = load_scenario("healthy-8xh100.json");
  TempScenario file(scenario);
  ManualClock clock;
  GpuCollector c(fake_options(file.path(), 5 * kNsPerSec), clock);
  EXPECT_EQ(c.sample().gpus[2].health, nvml::DeviceHealth::kOk);
  scenario["devices"][2]["state"] = "lost";
  file.write(scenario);
  // The fake re-reads a changed file within 100 ms of real time; the worker is the same
  // process, so ask until it shows (bounded).
  nvml::DeviceHealth h = nvml::DeviceHealth::kOk;
  for (int i = 0; i < 200 && h == nvml::DeviceHealth::kOk; ++i) h = c.sample().gpus[2].health;
  EXPECT_EQ(h, nvml::DeviceHealth::kLost);
  EXPECT_EQ(c.stats().worker_starts, 1u);
}

}  // namespace
}  // namespace cardiac::telemetry
