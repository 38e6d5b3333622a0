// SPDX-License-Identifier: Apache-2.0
// The NVML event worker: waits on the driver's event set and writes one line per event. The
// agent's end, GpuEventStream, is in event_stream.cpp.
#include "telemetry/event_worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvml/library.h"
#include "nvml/pci.h"
#include "telemetry/gpu_worker.h"

namespace cardiac::telemetry {
namespace {

void emit(const nlohmann::json& j) {
  std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

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

int run_event_worker(const WorkerOptions& options, const Clock& clock) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  signal(SIGPIPE, SIG_IGN);
  auto lib = nvml::Library::open(options.nvml_lib);
  if (!lib) {
    emit({{"type", "hello"}, {"ok", false}, {"message", lib.error().what()}});
    return 0;
  }
  const nvml::Api& api = (*lib)->api();
  if (api.init() != nvml::kSuccess || !api.event_set_create || !api.event_set_wait ||
      !api.register_events) {
    emit({{"type", "hello"}, {"ok", false}, {"message", "NVML events are not available"}});
    return 0;
  }
  unsigned count = 0;
  api.device_count(&count);
  nvmlEventSet_t set = nullptr;
  if (api.event_set_create(&set) != nvml::kSuccess) {
    emit({{"type", "hello"}, {"ok", false}, {"message", "nvmlEventSetCreate failed"}});
    return 0;
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
  emit({{"type", "hello"}, {"ok", true}, {"devices", count}});
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

}  // namespace cardiac::telemetry
