// SPDX-License-Identifier: Apache-2.0
// What the agent hands the queue about the machine: its latest report and what it has seen
// since it started. Kept apart from cluster_view.h so that the agent, which fills it in, does
// not pull in the scheduler's headers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "health/report.h"

namespace cardiac::queue {

// What the agent knows now. `report` is null before its first GPU sample.
struct MachineView {
  std::shared_ptr<const health::StatusReport> report;
  // Xids seen since the agent started, by (PCI bus id, Xid).
  std::map<std::pair<std::string, int>, std::uint64_t> xid_counts;
  // Some sample since the agent started listed a GPU; until then, with NVML unusable, a GPU
  // job could only wait for ever.
  bool gpus_seen = false;
  // GPU index → a critical alert firing on it now ("gpu_temperature_critical: ...").
  std::map<unsigned, std::string> critical_alerts;
};

}  // namespace cardiac::queue
