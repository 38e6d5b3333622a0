// SPDX-License-Identifier: Apache-2.0
// The dlopen loader and the reader, in-process, against the fake libnvidia-ml.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvml/library.h"
#include "nvml/reader.h"
#include "nvml/return_codes.h"

namespace cardiac::nvml {
namespace {

std::string scenario(const char* name) {
  return std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/" + name;
}

std::string resolved(const Library& lib, std::string_view field) {
  for (const auto& s : lib.symbols()) {
    if (s.field == field) return s.symbol;
  }
  return "?";
}

TEST(Library, ResolvesTheNewestVersionedNames) {
  auto lib = Library::open(FAKE_NVML_PATH);
  ASSERT_TRUE(lib) << lib.error().what();
  EXPECT_EQ(resolved(**lib, "init"), "nvmlInit_v2");
  EXPECT_EQ(resolved(**lib, "device_count"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(resolved(**lib, "handle_by_index"), "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_EQ(resolved(**lib, "compute_processes"), "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(resolved(**lib, "clocks_event_reasons"), "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ((*lib)->error_string(kGpuIsLost), "GPU is lost");
}

TEST(Library, MissingFileIsNotFound) {
  auto lib = Library::open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ErrorCode::kNotFound);
  EXPECT_NE(lib.error().message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(Library, ALibraryWithoutNvmlIsRejectedByName) {
  // libm loads fine but has none of NVML's entry points.
  auto lib = Library::open("libm.so.6");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(lib.error().message.find("lacks a required NVML entry point (init)"), std::string::npos)
      << lib.error().message;
}

TEST(Reader, ReadsThroughTheHookAndCachesIdentity) {
  setenv("CARDIAC_FAKE_NVML_SCENARIO", scenario("healthy-8xh100.json").c_str(), 1);
  auto lib = Library::open(FAKE_NVML_PATH);
  ASSERT_TRUE(lib);
  std::set<std::string> seen;
  int uuid_calls = 0;
  ManualClock clock;
  Reader reader(**lib, clock, [&](int, std::string_view fn) {
    seen.emplace(fn);
    if (fn == "nvmlDeviceGetUUID") ++uuid_calls;
  });
  auto sys = reader.init();
  ASSERT_TRUE(sys) << sys.error().message;
  EXPECT_EQ(sys->device_count, 8u);
  auto first = reader.read_device(0);
  auto second = reader.read_device(0);
  EXPECT_EQ(first.uuid, second.uuid);
  EXPECT_EQ(uuid_calls, 1);  // static facts are read once
  EXPECT_TRUE(seen.count("nvmlDeviceGetTemperature"));
  EXPECT_TRUE(seen.count("nvmlDeviceGetNvLinkErrorCounter"));
  EXPECT_EQ(second.sampled_at, clock.now());
}

// NVML's recovery action through nvmlDeviceGetFieldValues: read where the driver answers it,
// absent where it does not (a driver before 550).
TEST(Reader, ReadsTheRecoveryActionFieldWhereTheDriverHasIt) {
  std::ifstream in(scenario("healthy-8xh100.json"));
  auto doc = nlohmann::json::parse(in);
  doc["devices"][0]["recovery_action"] = 1;  // NVML_GPU_RECOVERY_ACTION_GPU_RESET
  doc["devices"][1]["recovery_action"] = 0;
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/cardiac-recovery-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << doc.dump();
  setenv("CARDIAC_FAKE_NVML_SCENARIO", path.c_str(), 1);
  auto lib = Library::open(FAKE_NVML_PATH);
  ASSERT_TRUE(lib);
  ManualClock clock;
  Reader reader(**lib, clock);
  ASSERT_TRUE(reader.init());
  EXPECT_EQ(reader.read_device(0).recovery_action, 1u);
  EXPECT_EQ(reader.read_device(1).recovery_action, 0u);
  EXPECT_FALSE(reader.read_device(2).recovery_action);
  std::remove(path.c_str());
}

// Application clocks through the dlopen'ed table: read every sample, the defaults once; a GPU
// or driver without them (NOT_SUPPORTED, FUNCTION_NOT_FOUND) gives no value, never 0, and a
// refusal is a call error.
TEST(Reader, ReadsApplicationClocksAndTheirDefaults) {
  std::ifstream in(scenario("healthy-8xh100.json"));
  auto doc = nlohmann::json::parse(in);
  doc["devices"][1]["app_clock_graphics_mhz"] = 1755;  // lowered with nvidia-smi -ac
  for (const char* key : {"app_clock_graphics_mhz", "app_clock_memory_mhz",
                          "default_app_clock_graphics_mhz", "default_app_clock_memory_mhz"}) {
    doc["devices"][2].erase(key);
  }
  doc["devices"][3]["returns"] = {{"nvmlDeviceGetApplicationsClock", "NO_PERMISSION"}};
  doc["devices"][4]["returns"] = {{"nvmlDeviceGetApplicationsClock", "FUNCTION_NOT_FOUND"},
                                  {"nvmlDeviceGetDefaultApplicationsClock", "FUNCTION_NOT_FOUND"}};
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/cardiac-app-clocks-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << doc.dump();
  setenv("CARDIAC_FAKE_NVML_SCENARIO", path.c_str(), 1);
  auto lib = Library::open(FAKE_NVML_PATH);
  ASSERT_TRUE(lib);
  EXPECT_EQ(resolved(**lib, "applications_clock"), "nvmlDeviceGetApplicationsClock");
  EXPECT_EQ(resolved(**lib, "default_applications_clock"), "nvmlDeviceGetDefaultApplicationsClock");
  int current_calls = 0;
  int default_calls = 0;
  ManualClock clock;
  Reader reader(**lib, clock, [&](int, std::string_view fn) {
    if (fn == "nvmlDeviceGetApplicationsClock") ++current_calls;
    if (fn == "nvmlDeviceGetDefaultApplicationsClock") ++default_calls;
  });
  ASSERT_TRUE(reader.init());

  auto at_default = reader.read_device(0);
  EXPECT_EQ(at_default.app_clock_graphics_mhz, 1980u);
  EXPECT_EQ(at_default.app_clock_memory_mhz, 2619u);
  EXPECT_EQ(at_default.default_app_clock_graphics_mhz, 1980u);
  EXPECT_EQ(at_default.default_app_clock_memory_mhz, 2619u);
  EXPECT_EQ(reader.read_device(0).app_clock_graphics_mhz, 1980u);
  EXPECT_EQ(current_calls, 4);  // graphics and memory, every sample
  EXPECT_EQ(default_calls, 2);  // the defaults once: they belong to the part

  auto lowered = reader.read_device(1);
  EXPECT_EQ(lowered.app_clock_graphics_mhz, 1755u);
  EXPECT_EQ(lowered.default_app_clock_graphics_mhz, 1980u);

  auto unsupported = reader.read_device(2);
  EXPECT_FALSE(unsupported.app_clock_graphics_mhz);
  EXPECT_FALSE(unsupported.app_clock_memory_mhz);
  EXPECT_FALSE(unsupported.default_app_clock_graphics_mhz);
  EXPECT_FALSE(unsupported.default_app_clock_memory_mhz);
  EXPECT_TRUE(unsupported.call_errors.empty());

  auto refused = reader.read_device(3);
  EXPECT_FALSE(refused.app_clock_graphics_mhz);
  EXPECT_EQ(refused.default_app_clock_graphics_mhz, 1980u);
  EXPECT_EQ(refused.call_errors["nvmlDeviceGetApplicationsClock"], "NO_PERMISSION");
  EXPECT_EQ(refused.health, DeviceHealth::kOk);

  auto old_driver = reader.read_device(4);
  EXPECT_FALSE(old_driver.app_clock_memory_mhz);
  EXPECT_FALSE(old_driver.default_app_clock_memory_mhz);
  EXPECT_TRUE(old_driver.call_errors.empty());
  EXPECT_EQ(old_driver.health, DeviceHealth::kOk);
  std::remove(path.c_str());
}

TEST(Reader, AsksWhereEachActiveNvLinkEndsOnce) {
  setenv("CARDIAC_FAKE_NVML_SCENARIO", scenario("dgx1-v100-slurm.json").c_str(), 1);
  auto lib = Library::open(FAKE_NVML_PATH);
  ASSERT_TRUE(lib);
  int remote_calls = 0;
  ManualClock clock;
  Reader reader(**lib, clock, [&](int, std::string_view fn) {
    if (fn == "nvmlDeviceGetNvLinkRemotePciInfo") ++remote_calls;
  });
  ASSERT_TRUE(reader.init());
  auto first = reader.read_device(0);
  auto second = reader.read_device(0);
  // GPU 0 of the hybrid cube-mesh: 6 links, to GPU 1, GPU 2, GPU 3 twice and GPU 4 twice.
  ASSERT_EQ(second.nvlinks.size(), 6u);
  EXPECT_EQ(remote_calls, 6);  // the wiring is asked once per link, not once per sample
  std::vector<std::string> ends;
  for (const auto& l : second.nvlinks) ends.push_back(l.remote_pci_bus_id);
  EXPECT_EQ(ends, (std::vector<std::string>{"0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0",
                                            "0000:0b:00.0", "0000:85:00.0", "0000:85:00.0"}));
  EXPECT_EQ(first.nvlinks[3].remote_pci_bus_id, "0000:0b:00.0");
}

TEST(Reader, InitFailureExplainsTheNextStep) {
  setenv("CARDIAC_FAKE_NVML_SCENARIO", scenario("version-mismatch.json").c_str(), 1);
  auto lib = Library::open(FAKE_NVML_PATH);
  ASSERT_TRUE(lib);
  ManualClock clock;
  Reader reader(**lib, clock);
  auto sys = reader.init();
  ASSERT_FALSE(sys);
  EXPECT_EQ(nvml::init_failure_kind(sys.error()), "version_mismatch");
  EXPECT_NE(sys.error().message.find("upgraded without a reboot"), std::string::npos);
}

// The worker reports these names; the collector, the agent's /healthz, the nvml_unavailable
// alert and `cardiac status` branch on them.
TEST(Reader, InitFailureKindComesFromTheErrorCode) {
  EXPECT_EQ(init_failure_kind(Error::not_found("x")), "driver_not_loaded");
  EXPECT_EQ(init_failure_kind(Error::unsupported("x")), "version_mismatch");
  EXPECT_EQ(init_failure_kind(Error{ErrorCode::kPermission, "x", ""}), "no_permission");
  EXPECT_EQ(init_failure_kind(Error::unavailable("x")), "init_failed");
  EXPECT_EQ(init_failure_kind(Error::io("/dev/nvidiactl", 5)), "init_failed");
}

TEST(ReturnCodes, NamesRoundTrip) {
  for (int rc : {0, 3, 15, 16, 18, 999}) {
    EXPECT_EQ(return_code_from_name(return_code_name(rc)), rc);
  }
  EXPECT_EQ(return_code_from_name("NVML_ERROR_GPU_IS_LOST"), kGpuIsLost);
  EXPECT_EQ(return_code_from_name("nonsense"), -1);
  EXPECT_EQ(return_code_name(12345), "UNKNOWN");
  EXPECT_TRUE(is_device_fatal(kGpuIsLost));
  EXPECT_FALSE(is_device_fatal(kNotSupported));
}

}  // namespace
}  // namespace cardiac::nvml
