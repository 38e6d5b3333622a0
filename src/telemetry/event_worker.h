// SPDX-License-Identifier: Apache-2.0
// NVML's event stream (Xid, ECC), waited on by a thread of the NVML worker (gpu_worker.h) that
// the agent starts with `--events 1`. Its lines go to the worker's standard output between the
// readings, and the parent (GpuCollector) keeps them for its owner:
//   {"type":"events","ok":true,"devices":N} | {"type":"events","ok":false,"message":"…"}
//   {"type":"event","gpu":3,"pci_bus_id":"0000:5d:00.0","event":"xid","xid":79,"time_ns":…}
//   {"type":"lost"}   (a registered GPU fell off: once, until a wait answers otherwise)
// A wait inside the driver blocks only that thread: NVML may be called from several threads at
// once, and the sampling thread goes on. One process rather than two halves what the workers
// hold (each maps its own libc, libstdc++ and NVML: about 5 MiB RSS).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/clock.h"

namespace cardiac::nvml {
struct Api;
}

namespace cardiac::telemetry {

// What NVML's event set reported. Named ("xid", "dbe", "sbe", "other") only on the worker's
// line protocol.
enum class GpuEventKind { kXid, kDoubleBitEcc, kSingleBitEcc, kOther };
std::string_view gpu_event_kind_name(GpuEventKind k);
GpuEventKind parse_gpu_event_kind(std::string_view name);  // kOther for names it does not know

struct GpuEvent {
  unsigned gpu = 0;
  std::string pci_bus_id;
  GpuEventKind kind = GpuEventKind::kOther;
  std::optional<int> xid;  // for kXid
  TimeNs time_ns = 0;
};

// Worker side: registers every GPU of an initialised NVML for Xid and ECC events and writes one
// line per event through `out` (which must be safe to call beside the sampling thread's writes).
// Returns only when events cannot be had (after saying so in an "events" line).
void run_event_loop(const nvml::Api& api, const std::function<void(const std::string&)>& out,
                    const Clock& clock);

// Parent side: the event in a worker's {"type":"event",…} line; nullopt for any other line.
std::optional<GpuEvent> gpu_event_from_json(const nlohmann::json& j);

}  // namespace cardiac::telemetry
