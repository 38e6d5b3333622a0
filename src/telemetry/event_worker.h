// SPDX-License-Identifier: Apache-2.0
// NVML's event stream (Xid, ECC) in its own isolated worker, so that a wait inside the driver
// can never delay sampling: `cardiac __nvml-worker --events 1` writes one JSON line per event.
//   {"type":"hello","ok":true,"devices":N} | {"type":"hello","ok":false,"message":"…"}
//   {"type":"event","gpu":3,"pci_bus_id":"0000:5d:00.0","event":"xid","xid":79,"time_ns":…}
//   {"type":"lost"}   (a registered GPU fell off: once, until a wait answers otherwise)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "platform/subprocess.h"

namespace cardiac::telemetry {

struct WorkerOptions;

// Worker side: runs until the parent goes away.
int run_event_worker(const WorkerOptions& options, const Clock& clock);

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

// Parent side: one event worker; restarted with backoff when it dies. Not thread-safe.
class GpuEventStream {
 public:
  GpuEventStream(std::string executable, std::string nvml_lib,
                 std::vector<std::pair<std::string, std::string>> env, const Clock& clock);
  // Waits up to `wait` for the next event; nullopt when none came (or the worker is down).
  std::optional<GpuEvent> next(DurationNs wait);
  // Whether a worker is up. While it is not, next() answers at once: a caller waits
  // until_restart() instead of asking again.
  [[nodiscard]] bool running() const { return ready_; }
  // How long until next() tries to start a worker again (at least 1 ms).
  [[nodiscard]] DurationNs until_restart() const;

 private:
  bool ensure_running();
  std::string executable_;
  std::string nvml_lib_;
  std::vector<std::pair<std::string, std::string>> env_;
  const Clock& clock_;
  Child worker_;
  bool ready_ = false;
  TimeNs retry_at_ = 0;
  DurationNs backoff_ = 0;
};

}  // namespace cardiac::telemetry
