// SPDX-License-Identifier: Apache-2.0
// The status report: one GPU snapshot and host snapshot with their verdicts, and its JSON
// form (schema "cardiac.status/v1", documented in docs/status.md).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "health/verdict.h"
#include "host/host.h"
#include "nvml/gpu.h"

namespace cardiac::health {

struct GpuStatus {
  nvml::GpuReading reading;
  Verdict verdict;
  bool bus_id_from_sysfs = false;  // NVML could not say; the PCI bus did (see report.cpp)
};

struct StatusReport {
  TimeNs taken_at = 0;
  nvml::GpuSnapshot nvml;  // gpus moved into `gpus` below
  std::vector<GpuStatus> gpus;
  host::HostSnapshot host;
  std::optional<host::HostRates> rates;  // when two host snapshots far enough apart exist
  Verdict inventory;
  Verdict host_verdict;
  Level overall = Level::kOk;
};

// Fills each GPU process's name from /proc/<pid>/comm under `fs`, and its job
// (jobmap::attribute_jobs); a process that is gone keeps an empty name and no job.
void name_gpu_processes(const FileSystem& fs, nvml::GpuSnapshot& snap);

// Judges everything. `rates` may be null.
StatusReport build_report(nvml::GpuSnapshot gpus, host::HostSnapshot host,
                          const host::HostRates* rates);

nlohmann::json to_json(const StatusReport& r);
nlohmann::json to_json(const Verdict& v);

}  // namespace cardiac::health
