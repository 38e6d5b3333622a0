// SPDX-License-Identifier: Apache-2.0
// Contract tests of the fake libnvidia-ml: exports, init, return codes, protocols, reloading.
#include <cstring>
#include <future>
#include <vector>

#include "support.h"

namespace fake_test {
namespace {

// Two small devices: enough for every protocol without the 600-line fixtures.
constexpr const char* kSmall = R"({
  "driver_version": "550.54.15",
  "returns": {"nvmlDeviceGetPowerUsage": "NO_PERMISSION"},
  "devices": [
    {"name": "Tesla V100-SXM2-16GB", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
     "temperature": 40, "retired_pages_sbe": 3, "retired_pages_dbe": 0,
     "returns": {"nvmlDeviceGetFanSpeed": "UNKNOWN", "nvmlDeviceGetComputeRunningProcesses": 15},
     "processes": [{"pid": 10, "used_memory_bytes": 1024, "type": "compute"},
                   {"pid": 11, "type": "compute"},
                   {"pid": 12, "used_memory_bytes": 2048, "type": "graphics"}],
     "nvlinks": [{"link": 0, "active": true, "version": 2, "replay_errors": 5,
                  "remote_pci_bus_id": "00000000:3B:00.0"},
                 {"link": 1, "active": false},
                 {"link": 3, "active": true, "version": 2}]},
    {"name": "Tesla V100-SXM2-16GB", "temperature": 41,
     "processes": [{"pid": 20, "used_memory_bytes": 4096, "type": "compute+graphics"}]}
  ],
  "timeline": [{"at": 100, "device": 1, "set": {"temperature": null, "state": "lost"}},
               {"at": 100, "set_system": {"driver_version": "550.90.07"}}],
  "events": [{"at": 0, "device": 0, "type": "xid", "data": 79},
             {"at": 0, "device": 1, "type": "xid", "data": 31},
             {"at": 0, "device": 0, "type": "dbe"}],
  "hangs": [{"function": "nvmlDeviceGetTemperature", "device": 1, "seconds": 0.05}]
})";

TEST(FakeNvmlExports, EverySymbolOfSymbolsDefIsExported) {
  std::vector<const char*> names = {
#define CARDIAC_NVML_FN(field, required, type)
#define CARDIAC_NVML_SYM(field, symbol) #symbol,
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM
  };
  ASSERT_GE(names.size(), 50u);  // the expansion worked
  for (const char* name : names) {
    EXPECT_NE(dlsym(Fake::get().handle(), name), nullptr) << name;
  }
  EXPECT_NE(dlsym(Fake::get().handle(), "cardiacFakeNvmlCallCount"), nullptr);
  EXPECT_NE(dlsym(Fake::get().handle(), "cardiacFakeNvmlResetCounts"), nullptr);
  // Internals stay hidden: fake::init(const char*).
  EXPECT_EQ(dlsym(Fake::get().handle(), "_ZN4fake4initEPKc"), nullptr);
}

TEST(FakeNvmlInit, CallsBeforeInitAreUninitialized) {
  unsigned count = 0;
  EXPECT_EQ(api().device_count(&count), ReturnCode::kUninitialized);
  EXPECT_EQ(api().shutdown(), ReturnCode::kUninitialized);
  EXPECT_STREQ(api().error_string(ReturnCode::kGpuIsLost), "GPU is lost");
  EXPECT_STREQ(api().error_string(ReturnCode::kNotSupported), "Not Supported");
  EXPECT_STREQ(api().error_string(12345), "Unknown Error");
}

TEST(FakeNvmlInit, IsReferenceCounted) {
  TempScenario file(kSmall);
  Session session(file.path());
  ASSERT_EQ(session.rc(), ReturnCode::kSuccess);
  ASSERT_EQ(api().init(), ReturnCode::kSuccess);
  ASSERT_EQ(api().shutdown(), ReturnCode::kSuccess);
  unsigned count = 0;
  EXPECT_EQ(api().device_count(&count), ReturnCode::kSuccess);
  EXPECT_EQ(count, 2u);
}

TEST(FakeNvmlInit, BadScenariosFailWithUnknown) {
  unsetenv("CARDIAC_FAKE_NVML_SCENARIO");
  EXPECT_EQ(api().init(), ReturnCode::kUnknown);
  EXPECT_EQ(Session("/nonexistent/scenario.json").rc(), ReturnCode::kUnknown);
  TempScenario malformed("{\"devices\": [ {\"name\": \"x\",, } ]}");
  EXPECT_EQ(Session(malformed.path()).rc(), ReturnCode::kUnknown);
  TempScenario typo(R"({"devices": [{"temprature": 40}]})");
  EXPECT_EQ(Session(typo.path()).rc(), ReturnCode::kUnknown);
  TempScenario bad_remote(
      R"({"devices": [{"nvlinks": [{"link": 0, "remote_pci_bus_id": "3b"}]}]})");
  EXPECT_EQ(Session(bad_remote.path()).rc(), ReturnCode::kUnknown);
  TempScenario bad_code(R"({"init_return": "NOT_A_CODE"})");
  EXPECT_EQ(Session(bad_code.path()).rc(), ReturnCode::kUnknown);
  TempScenario bad_toml("devices = [\n", ".toml");
  EXPECT_EQ(Session(bad_toml.path()).rc(), ReturnCode::kUnknown);
  TempScenario fine(R"({})");
  setenv("CARDIAC_FAKE_NVML_SCENARIO", fine.path().c_str(), 1);
  setenv("CARDIAC_FAKE_NVML_EPOCH", "yesterday", 1);
  EXPECT_EQ(api().init(), ReturnCode::kUnknown);
  unsetenv("CARDIAC_FAKE_NVML_EPOCH");
}

TEST(FakeNvmlReturns, LibraryWideDeviceWideAndFamilyNames) {
  TempScenario file(kSmall);
  Session session(file.path());
  ASSERT_EQ(session.rc(), ReturnCode::kSuccess);
  unsigned value = 0;
  EXPECT_EQ(api().power_usage(session.device(0), &value), ReturnCode::kNoPermission);
  EXPECT_EQ(api().fan_speed(session.device(0), &value), ReturnCode::kUnknown);
  EXPECT_EQ(api().fan_speed(session.device(1), &value), ReturnCode::kNotSupported);
  unsigned n = 0;
  // "nvmlDeviceGetComputeRunningProcesses" covers _v3, _v2 and the unversioned name.
  EXPECT_EQ(api().compute_processes(session.device(0), &n, nullptr), ReturnCode::kGpuIsLost);
  EXPECT_EQ(api().compute_processes_v1(session.device(0), &n, nullptr), ReturnCode::kGpuIsLost);
  EXPECT_EQ(api().temperature(session.device(0), 0, &value), ReturnCode::kSuccess);
  EXPECT_EQ(value, 40u);
  EXPECT_EQ(api().temperature(session.device(0), 1, &value), ReturnCode::kInvalidArgument);
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(api().handle_by_index(2, &none), ReturnCode::kInvalidArgument);
  EXPECT_EQ(api().temperature(nullptr, 0, &value), ReturnCode::kInvalidArgument);
}

TEST(FakeNvmlProtocols, ProcessCount) {
  TempScenario file(kSmall);
  Session session(file.path());
  nvmlDevice_t d1 = session.device(1);
  unsigned n = 0;
  EXPECT_EQ(api().compute_processes(d1, &n, nullptr), ReturnCode::kInsufficientSize);
  EXPECT_EQ(n, 1u);
  nvmlProcessInfo_t infos[4] = {};
  n = 4;
  ASSERT_EQ(api().compute_processes(d1, &n, infos), ReturnCode::kSuccess);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, 20u);
  EXPECT_EQ(infos[0].usedGpuMemory, 4096u);
  EXPECT_EQ(infos[0].gpuInstanceId, 0xFFFFFFFFu);
  n = 4;
  ASSERT_EQ(api().graphics_processes(d1, &n, infos), ReturnCode::kSuccess);
  EXPECT_EQ(n, 1u);  // a compute+graphics process is listed by both calls
}

TEST(FakeNvmlProtocols, ProcessCountUnversionedAndNotAvailableMemory) {
  // Same file without the per-device override on the process calls.
  std::string text = kSmall;
  const std::string override = R"(, "nvmlDeviceGetComputeRunningProcesses": 15)";
  text.erase(text.find(override), override.size());
  TempScenario file(text);
  Session session(file.path());
  nvmlDevice_t d0 = session.device(0);
  unsigned n = 1;
  nvmlProcessInfo_v1_t v1[4] = {};
  EXPECT_EQ(api().compute_processes_v1(d0, &n, v1), ReturnCode::kInsufficientSize);
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(api().compute_processes_v1(d0, &n, v1), ReturnCode::kSuccess);
  EXPECT_EQ(v1[0].usedGpuMemory, 1024u);
  EXPECT_EQ(v1[1].usedGpuMemory, ~0ull);  // NVML_VALUE_NOT_AVAILABLE
  nvmlProcessInfo_t infos[2] = {};
  n = 2;
  ASSERT_EQ(api().graphics_processes(d0, &n, infos), ReturnCode::kSuccess);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, 12u);
}

TEST(FakeNvmlProtocols, ProcessMemoryGrowsAtItsRate) {
  TempScenario file(R"({"devices": [{"processes": [
      {"pid": 30, "used_memory_bytes": 1000, "used_memory_growth_bytes_per_s": 10},
      {"pid": 31, "used_memory_bytes": 1000, "used_memory_growth_bytes_per_s": 10,
       "growth_since": 200},
      {"pid": 32, "used_memory_growth_bytes_per_s": 10}]}]})");
  Session session(file.path(), 100.0);
  nvmlProcessInfo_t infos[3] = {};
  unsigned n = 3;
  ASSERT_EQ(api().compute_processes(session.device(0), &n, infos), ReturnCode::kSuccess);
  ASSERT_EQ(n, 3u);
  // About 100 s in: 1000 + 10 × 100 (the session's clock moved a little since it began).
  EXPECT_GE(infos[0].usedGpuMemory, 2000u);
  EXPECT_LT(infos[0].usedGpuMemory, 2100u);
  EXPECT_EQ(infos[1].usedGpuMemory, 1000u);  // its growth starts at t = 200
  EXPECT_EQ(infos[2].usedGpuMemory, ~0ull);  // no base: still not available
}

TEST(FakeNvmlProtocols, RetiredPagesCount) {
  TempScenario file(kSmall);
  Session session(file.path());
  nvmlDevice_t d0 = session.device(0);
  unsigned n = 0;
  ASSERT_EQ(api().retired_pages(d0, 0, &n, nullptr), ReturnCode::kSuccess);
  EXPECT_EQ(n, 3u);
  unsigned long long addresses[3] = {};
  n = 2;
  EXPECT_EQ(api().retired_pages(d0, 0, &n, addresses), ReturnCode::kInsufficientSize);
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(api().retired_pages(d0, 0, &n, addresses), ReturnCode::kSuccess);
  EXPECT_NE(addresses[0], addresses[2]);
  EXPECT_EQ(api().retired_pages(d0, 2, &n, addresses), ReturnCode::kInvalidArgument);
  EXPECT_EQ(api().retired_pages(session.device(1), 1, &n, nullptr), ReturnCode::kNotSupported);
}

TEST(FakeNvmlProtocols, NvLinkLinks) {
  TempScenario file(kSmall);
  Session session(file.path());
  nvmlDevice_t d0 = session.device(0);
  unsigned active = 9, version = 0;
  unsigned long long errors = 0;
  ASSERT_EQ(api().nvlink_state(d0, 0, &active), ReturnCode::kSuccess);
  EXPECT_EQ(active, 1u);
  ASSERT_EQ(api().nvlink_state(d0, 1, &active), ReturnCode::kSuccess);
  EXPECT_EQ(active, 0u);
  EXPECT_EQ(api().nvlink_state(d0, 2, &active), ReturnCode::kNotSupported);     // gap
  EXPECT_EQ(api().nvlink_state(d0, 4, &active), ReturnCode::kInvalidArgument);  // past the end
  ASSERT_EQ(api().nvlink_version(d0, 3, &version), ReturnCode::kSuccess);
  EXPECT_EQ(version, 2u);
  ASSERT_EQ(api().nvlink_error_counter(d0, 0, 0, &errors), ReturnCode::kSuccess);
  EXPECT_EQ(errors, 5u);
  EXPECT_EQ(api().nvlink_error_counter(d0, 0, 2, &errors), ReturnCode::kNotSupported);
  EXPECT_EQ(api().nvlink_state(session.device(1), 0, &active), ReturnCode::kNotSupported);
  nvmlPciInfo_t remote{};
  ASSERT_EQ(api().nvlink_remote_pci(d0, 0, &remote), ReturnCode::kSuccess);
  EXPECT_STREQ(remote.busId, "00000000:3B:00.0");
  EXPECT_STREQ(remote.busIdLegacy, "0000:3B:00.0");
  EXPECT_EQ(remote.bus, 0x3bu);
  EXPECT_EQ(api().nvlink_remote_pci(d0, 3, &remote), ReturnCode::kNotSupported);  // not given
  EXPECT_EQ(api().nvlink_remote_pci(d0, 0, nullptr), ReturnCode::kInvalidArgument);
}

TEST(FakeNvmlTimeline, NullRemovesKeysAndSetSystemApplies) {
  TempScenario file(kSmall);
  char version[80] = {};
  unsigned temp = 0;
  {
    Session before(file.path(), 10.0);
    ASSERT_EQ(api().system_driver_version(version, sizeof version), ReturnCode::kSuccess);
    EXPECT_STREQ(version, "550.54.15");
    EXPECT_EQ(api().system_driver_version(version, 9), ReturnCode::kInsufficientSize);
    EXPECT_EQ(api().temperature(before.device(1), 0, &temp), ReturnCode::kSuccess);
  }
  Session after(file.path(), 150.0);
  ASSERT_EQ(api().system_driver_version(version, sizeof version), ReturnCode::kSuccess);
  EXPECT_STREQ(version, "550.90.07");
  EXPECT_EQ(api().temperature(after.device(1), 0, &temp), ReturnCode::kGpuIsLost);
  int cuda = 0;
  EXPECT_EQ(api().system_cuda_driver_version(&cuda), ReturnCode::kNotSupported);
}

TEST(FakeNvmlEvents, DeliveredOncePerSet) {
  TempScenario file(kSmall);
  Session session(file.path());
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api().event_set_create(&set), ReturnCode::kSuccess);
  unsigned long long supported = 0;
  ASSERT_EQ(api().supported_event_types(session.device(0), &supported), ReturnCode::kSuccess);
  EXPECT_EQ(supported, 0x1Fu);
  EXPECT_EQ(api().register_events(session.device(0), 0x8000, set), ReturnCode::kNotSupported);
  ASSERT_EQ(api().register_events(session.device(0), 0x8, set), ReturnCode::kSuccess);
  nvmlEventData_t data{};
  ASSERT_EQ(api().event_set_wait(set, &data, 0), ReturnCode::kSuccess);
  EXPECT_EQ(data.device, session.device(0));
  EXPECT_EQ(data.eventType, 0x8u);
  EXPECT_EQ(data.eventData, 79u);
  EXPECT_EQ(data.gpuInstanceId, 0xFFFFFFFFu);
  // Device 1 is not registered and the DBE bit was not asked for.
  EXPECT_EQ(api().event_set_wait(set, &data, 0), ReturnCode::kTimeout);
  ASSERT_EQ(api().register_events(session.device(0), 0x2, set), ReturnCode::kSuccess);
  ASSERT_EQ(api().event_set_wait(set, &data, 0), ReturnCode::kSuccess);
  EXPECT_EQ(data.eventType, 0x2u);
  EXPECT_EQ(api().event_set_wait(set, &data, 0), ReturnCode::kTimeout);

  nvmlEventSet_t other = nullptr;
  ASSERT_EQ(api().event_set_create(&other), ReturnCode::kSuccess);
  ASSERT_EQ(api().register_events(session.device(1), 0x8, other), ReturnCode::kSuccess);
  ASSERT_EQ(api().event_set_wait(other, &data, 0), ReturnCode::kSuccess);
  EXPECT_EQ(data.eventData, 31u);
  EXPECT_EQ(api().event_set_free(other), ReturnCode::kSuccess);
  EXPECT_EQ(api().event_set_free(set), ReturnCode::kSuccess);
  EXPECT_EQ(api().event_set_free(set), ReturnCode::kInvalidArgument);
}

// The waits below would take their whole minute if nothing ended them, and then fail: no test
// here sleeps or measures time.
constexpr unsigned kLongWaitMs = 60'000;

// One registered set on device 0 of `file`, waited on by another thread.
struct Waiter {
  explicit Waiter(const Session& session) {
    EXPECT_EQ(api().event_set_create(&set), ReturnCode::kSuccess);
    EXPECT_EQ(api().register_events(session.device(0), 0x8, set), ReturnCode::kSuccess);
    result = std::async(std::launch::async,
                        [this] { return api().event_set_wait(set, &data, kLongWaitMs); });
  }
  nvmlEventSet_t set = nullptr;
  nvmlEventData_t data{};
  std::future<nvmlReturn_t> result;
};

TEST(FakeNvmlEvents, AWaitEndsWhenAnEventIsInjected) {
  TempScenario file(R"({"devices": [{"name": "A"}]})");
  Session session(file.path());
  Waiter w(session);
  // Whether the waiter is already blocked or not yet called, it must see this event.
  file.write(R"({"devices": [{"name": "A"}],
                 "events": [{"at": 0, "device": 0, "type": "xid", "data": 94}]})");
  ASSERT_EQ(w.result.get(), ReturnCode::kSuccess);
  EXPECT_EQ(w.data.eventData, 94u);
  EXPECT_EQ(api().event_set_free(w.set), ReturnCode::kSuccess);
}

TEST(FakeNvmlEvents, AWaitEndsWhenTheNextEventFallsDue) {
  TempScenario file(R"({"devices": [{"name": "A"}],
                        "events": [{"at": 0.2, "device": 0, "type": "xid", "data": 13}]})");
  Session session(file.path(), 0.0);
  Waiter w(session);
  ASSERT_EQ(w.result.get(), ReturnCode::kSuccess);
  EXPECT_EQ(w.data.eventData, 13u);
  EXPECT_EQ(api().event_set_free(w.set), ReturnCode::kSuccess);
}

TEST(FakeNvmlEvents, AWaitEndsWhenARegisteredGpuIsLostOnTheTimeline) {
  TempScenario file(R"({"devices": [{"name": "A"}],
                        "timeline": [{"at": 0.2, "device": 0, "set": {"state": "lost"}}]})");
  Session session(file.path(), 0.0);
  Waiter w(session);
  EXPECT_EQ(w.result.get(), ReturnCode::kGpuIsLost);
  EXPECT_EQ(api().event_set_free(w.set), ReturnCode::kSuccess);
}

TEST(FakeNvmlEvents, ShutdownEndsAWait) {
  TempScenario file(R"({"devices": [{"name": "A"}]})");
  Session session(file.path());
  Waiter w(session);
  ASSERT_EQ(api().shutdown(), ReturnCode::kSuccess);  // the Session's reference
  EXPECT_EQ(w.result.get(), ReturnCode::kUninitialized);
}

TEST(FakeNvmlHangs, CallCompletesAfterTheHangAndIsCounted) {
  TempScenario file(kSmall);
  Session session(file.path());
  Fake::get().reset_counts();
  unsigned temp = 0;
  ASSERT_EQ(api().temperature(session.device(1), 0, &temp), ReturnCode::kSuccess);
  EXPECT_EQ(temp, 41u);
  ASSERT_EQ(api().temperature(session.device(0), 0, &temp), ReturnCode::kSuccess);
  EXPECT_EQ(Fake::get().calls("nvmlDeviceGetTemperature"), 2u);
  EXPECT_EQ(Fake::get().calls("nvmlDeviceGetHandleByIndex_v2"), 2u);
  EXPECT_EQ(Fake::get().calls("nvmlDeviceGetName"), 0u);
}

TEST(FakeNvmlReload, RewrittenScenarioIsSeenByTheNextEnumeration) {
  TempScenario file(R"({"devices": [{"name": "A"}]})");
  Session session(file.path());
  char name[96] = {};
  ASSERT_EQ(api().name(session.device(0), name, sizeof name), ReturnCode::kSuccess);
  EXPECT_STREQ(name, "A");
  file.write(R"({"devices": [{"name": "A", "state": "lost"}]})");
  nvmlDevice_t d = session.device(0);  // GetHandleByIndex always checks the file
  EXPECT_EQ(api().name(d, name, sizeof name), ReturnCode::kGpuIsLost);
  // A broken rewrite keeps the last good scenario.
  file.write(R"({"devices": [)");
  d = session.device(0);
  EXPECT_EQ(api().name(d, name, sizeof name), ReturnCode::kGpuIsLost);
}

}  // namespace
}  // namespace fake_test
