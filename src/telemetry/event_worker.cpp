// SPDX-License-Identifier: Apache-2.0
// The NVML event loop of the worker's event thread (event_worker.h).
#include "telemetry/event_worker.h"

#include <unistd.h>

#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvml/library.h"
#include "nvml/pci.h"

namespace cardiac::telemetry {
namespace {

constexpr std::array<std::pair<GpuEventKind, std::string_view>, 4> kKindNames{{
    {GpuEventKind::kXid, "xid"},
    {GpuEventKind::kDoubleBitEcc, "dbe"},
    {GpuEventKind::kSingleBitEcc, "sbe"},
    {GpuEventKind::kOther, "other"},
}};

// How long one nvmlEventSetWait may block. An event ends it at once, and the parent stops the
// worker with a signal, so the timeout only sets how often an idle worker wakes: rarely.
constexpr unsigned kEventWaitMs = 5000;

GpuEventKind event_kind(unsigned long long type) {
  if (type & nvml::kEventXidCritical) return GpuEventKind::kXid;
  if (type & nvml::kEventDoubleBitEcc) return GpuEventKind::kDoubleBitEcc;
  if (type & nvml::kEventSingleBitEcc) return GpuEventKind::kSingleBitEcc;
  return GpuEventKind::kOther;
}

}  // namespace

std::string_view gpu_event_kind_name(GpuEventKind k) {
  for (const auto& [kind, name] : kKindNames) {
    if (kind == k) return name;
  }
  return "other";
}

GpuEventKind parse_gpu_event_kind(std::string_view name) {
  for (const auto& [kind, n] : kKindNames) {
    if (n == name) return kind;
  }
  return GpuEventKind::kOther;
}

void run_event_loop(const nvml::Api& api, const std::function<void(const std::string&)>& out,
                    const Clock& clock) {
  auto emit = [&out](const nlohmann::json& j) { out(j.dump() + "\n"); };
  if (!api.event_set_create || !api.event_set_wait || !api.register_events) {
    emit({{"type", "events"},
          {"ok", false},
          {"message", "this NVML has no event functions (nvmlEventSetWait)"}});
    return;
  }
  unsigned count = 0;
  api.device_count(&count);
  nvmlEventSet_t set = nullptr;
  if (nvmlReturn_t rc = api.event_set_create(&set); rc != nvml::kSuccess) {
    emit({{"type", "events"},
          {"ok", false},
          {"message", "nvmlEventSetCreate failed (" + std::to_string(rc) + ")"}});
    return;
  }
  struct Device {
    nvmlDevice_t handle = nullptr;
    std::string bus_id;
  };
  std::vector<Device> devices(count);
  const unsigned long long wanted =
      nvml::kEventXidCritical | nvml::kEventDoubleBitEcc | nvml::kEventSingleBitEcc;
  for (unsigned i = 0; i < count; ++i) {
    if (api.handle_by_index(i, &devices[i].handle) != nvml::kSuccess) continue;
    nvmlPciInfo_t pci{};
    if (api.pci_info && api.pci_info(devices[i].handle, &pci) == nvml::kSuccess) {
      devices[i].bus_id = nvml::normalize_pci_bus_id(pci.busId);
    }
    unsigned long long supported = wanted;
    if (api.supported_event_types) api.supported_event_types(devices[i].handle, &supported);
    // Registering a type the device does not support fails the whole call.
    if (supported & wanted) api.register_events(devices[i].handle, supported & wanted, set);
  }
  emit({{"type", "events"}, {"ok", true}, {"devices", count}});
  bool lost = false;
  while (true) {
    nvmlEventData_t data{};
    nvmlReturn_t rc = api.event_set_wait(set, &data, kEventWaitMs);
    if (rc == nvml::kTimeout) continue;
    if (rc == nvml::kGpuIsLost) {
      if (!lost) emit({{"type", "lost"}});  // once: the driver answers LOST to every wait
      lost = true;
      sleep(1);  // it answers at once: do not spin, but keep the other GPUs' events coming
      continue;
    }
    lost = false;
    if (rc != nvml::kSuccess) {
      sleep(1);
      continue;
    }
    unsigned index = 0;
    for (unsigned i = 0; i < count; ++i) {
      if (devices[i].handle == data.device) index = i;
    }
    nlohmann::json j{{"type", "event"},
                     {"gpu", index},
                     {"pci_bus_id", devices[index].bus_id},
                     {"event", gpu_event_kind_name(event_kind(data.eventType))},
                     {"time_ns", clock.now()}};
    if (data.eventType & nvml::kEventXidCritical) j["xid"] = data.eventData;
    emit(j);
  }
}

std::optional<GpuEvent> gpu_event_from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.value("type", nlohmann::json()) != "event") return std::nullopt;
  // The worker is our own program, but a line is still checked field by field: a value of
  // another type is left at its default rather than thrown on in the sampler's thread.
  auto field = [&j](const char* key) {
    auto it = j.find(key);
    return it == j.end() ? nlohmann::json() : *it;
  };
  GpuEvent e;
  if (auto v = field("gpu"); v.is_number_unsigned()) e.gpu = v.get<unsigned>();
  if (auto v = field("pci_bus_id"); v.is_string()) e.pci_bus_id = v.get<std::string>();
  if (auto v = field("event"); v.is_string()) e.kind = parse_gpu_event_kind(v.get<std::string>());
  if (auto v = field("xid"); v.is_number_integer()) e.xid = v.get<int>();
  if (auto v = field("time_ns"); v.is_number_integer()) e.time_ns = v.get<TimeNs>();
  return e;
}

}  // namespace cardiac::telemetry
