// SPDX-License-Identifier: Apache-2.0
// Parent side of the NVML isolation: keeps a worker process, asks it for samples with a
// deadline per answer, and turns a silent worker into an "unresponsive" reading instead of
// a hang. Wedged devices are skipped and re-probed with exponential backoff.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/clock.h"
#include "nvml/gpu.h"
#include "platform/subprocess.h"
#include "telemetry/event_worker.h"
#include "telemetry/worker_progress.h"

namespace cardiac::telemetry {

struct GpuCollectorOptions {
  std::string executable;                  // the cardiac binary to re-execute (default: ourselves)
  std::string nvml_lib;                    // empty: default search order
  DurationNs timeout = 5 * kNsPerSec;      // per NVML answer
  DurationNs retry_min = 30 * kNsPerSec;   // first re-probe of a wedged device / worker
  DurationNs retry_max = 600 * kNsPerSec;  // backoff ceiling
  std::vector<std::pair<std::string, std::string>> env{};  // extra environment for the worker
  // Also follow NVML's event stream (Xid, ECC) in a thread of the same worker
  // (event_worker.h); its events are read with the samples and kept for take_events().
  bool events = false;
};

struct GpuCollectorStats {
  std::uint64_t samples = 0;
  std::uint64_t worker_starts = 0;
  std::uint64_t worker_restarts = 0;  // starts after the first
  std::uint64_t timeouts = 0;
};

// Not thread-safe: one owner calls sample().
class GpuCollector {
 public:
  GpuCollector(GpuCollectorOptions options, const Clock& clock);
  ~GpuCollector();

  // One sample of every GPU. Returns within about `timeout` per device that stops answering
  // (plus one for a hung nvmlInit); never blocks on the driver itself.
  nvml::GpuSnapshot sample();

  [[nodiscard]] const GpuCollectorStats& stats() const { return stats_; }

  // The NVML events read so far (with `events`), oldest first; the worker writes them as they
  // happen and they are read with the next sample. Events of a worker that had to be killed
  // after its last sample are lost with it (the kernel log still tells the Xids).
  std::vector<GpuEvent> take_events() { return std::exchange(events_, {}); }

 private:
  struct Wedged {
    TimeNs retry_at = 0;
    DurationNs backoff = 0;
    std::string detail;
  };
  Result<void> ensure_worker(nvml::GpuSnapshot& snap);
  void drop_worker();
  // Reads answers until "end" for the requested devices; returns false when the worker had
  // to be abandoned (timeout or exit).
  bool collect(const std::vector<unsigned>& only, nvml::GpuSnapshot& snap);
  void mark_wedged(unsigned device, const std::string& detail);
  void note_events(const nlohmann::json& msg);

  GpuCollectorOptions options_;
  const Clock& clock_;
  Child worker_;
  std::unique_ptr<WorkerProgress> progress_;
  bool hello_ok_ = false;
  nvml::NvmlSystem system_;
  std::string hello_kind_;
  std::string hello_message_;
  std::map<unsigned, Wedged> wedged_;
  std::map<unsigned, nvml::GpuReading> identity_;  // last good reading per device
  TimeNs worker_retry_at_ = 0;
  DurationNs worker_backoff_ = 0;
  GpuCollectorStats stats_;
  std::vector<GpuEvent> events_;
  std::string events_note_;  // the last "events" line's message, said once in the log
};

}  // namespace cardiac::telemetry
