// SPDX-License-Identifier: Apache-2.0
// Event entry points: event sets, registration, and delivery of the scenario's timed events.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "exports.h"
#include "state.h"

using cardiac::nvml::ReturnCode;
using fake::Json;

// Guarded by the library mutex, which every Call holds for its body.
struct nvmlEventSet_st {
  std::map<unsigned, unsigned long long> registered;  // device index → event bits
  std::vector<bool> delivered;                        // by position in the scenario's events
};

namespace {

constexpr unsigned long long kDefaultSupportedEvents = 0x1F;  // SBE, DBE, P-state, Xid, clock

std::set<nvmlEventSet_t>& live_sets() {
  static auto* sets = new std::set<nvmlEventSet_t>;
  return *sets;
}

bool is_live(nvmlEventSet_t set) {
  return set && live_sets().count(set) != 0;
}

unsigned long long supported_events(const Json& device) {
  return device.value("supported_event_types", kDefaultSupportedEvents);
}

// Delivers the first due, undelivered event for a registered device. Events are identified by
// their position in the file, so a rewrite should only append to the list.
bool take_due_event(fake::Call& call, nvmlEventSet_t set, nvmlEventData_t* data) {
  const auto& events = call.scenario().events;
  if (set->delivered.size() < events.size()) set->delivered.resize(events.size(), false);
  const double t = call.now();
  for (std::size_t i = 0; i < events.size() && events[i].at <= t; ++i) {
    const fake::Event& e = events[i];
    auto reg = set->registered.find(e.device);
    if (set->delivered[i] || reg == set->registered.end() || !(reg->second & e.type)) continue;
    set->delivered[i] = true;
    *data = nvmlEventData_t{fake::handle_of(e.device), e.type, e.data, 0xFFFFFFFF, 0xFFFFFFFF};
    return true;
  }
  return false;
}

// Seconds until the next undelivered event for a registered device, or a negative value.
double next_due_in(fake::Call& call, nvmlEventSet_t set) {
  const auto& events = call.scenario().events;
  const double t = call.now();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const bool delivered = i < set->delivered.size() && set->delivered[i];
    if (!delivered && set->registered.count(events[i].device) && events[i].at > t) {
      return events[i].at - t;
    }
  }
  return -1;
}

// Real NVML ends a wait with GPU_IS_LOST when a registered GPU has fallen off the bus.
bool registered_device_lost(fake::Call& call, nvmlEventSet_t set) {
  const auto& devices = call.view().devices;
  for (const auto& [index, bits] : set->registered) {
    if (index < devices.size() && devices[index].value("state", "ok") == "lost") return true;
  }
  return false;
}

// Seconds until the next timeline entry, which may make a registered device lost; or negative.
double next_change_in(fake::Call& call) {
  const double t = call.now();
  for (const auto& entry : call.scenario().timeline) {
    if (entry.at > t) return entry.at - t;
  }
  return -1;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  fake::Call call(__func__);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!set) return ReturnCode::kInvalidArgument;
  *set = new nvmlEventSet_st;
  live_sets().insert(*set);
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  fake::Call call(__func__);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!is_live(set)) return ReturnCode::kInvalidArgument;
  live_sets().erase(set);
  delete set;
  call.wake_waiters();
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* types) {
  FAKE_DEVICE_CALL(device);
  if (!types) return ReturnCode::kInvalidArgument;
  *types = supported_events(call.device());
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                      nvmlEventSet_t set) {
  FAKE_DEVICE_CALL(device);
  if (!is_live(set)) return ReturnCode::kInvalidArgument;
  if (types & ~supported_events(call.device())) return ReturnCode::kNotSupported;
  set->registered[call.index()] |= types;
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  fake::Call call(__func__);
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!is_live(set) || !data) return ReturnCode::kInvalidArgument;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  for (;;) {
    if (take_due_event(call, set, data)) return ReturnCode::kSuccess;
    if (registered_device_lost(call, set)) return ReturnCode::kGpuIsLost;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return ReturnCode::kTimeout;
    // Block as the driver does, until something can have changed: the next event or timeline
    // entry falls due, the scenario is rewritten, or the library is shut down.
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(left);
    for (double due : {next_due_in(call, set), next_change_in(call)}) {
      if (due < 0) continue;
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::duration<double>(due)) +
                                std::chrono::milliseconds(1));
    }
    // The set may be freed, or the library shut down, by another thread while we wait.
    if (!call.wait_unlocked(wait)) return ReturnCode::kUninitialized;
    if (!is_live(set)) return ReturnCode::kInvalidArgument;
  }
}

}  // extern "C"
