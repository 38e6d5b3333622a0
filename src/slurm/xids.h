// SPDX-License-Identifier: Apache-2.0
// The epilog's attribution: which Xids the agent recorded (GET /api/v1/events) happened on a
// job's GPUs while it ran. Pure, for tests.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/severity.h"

namespace cardiac::slurm {

struct JobXid {
  TimeNs time = 0;
  std::optional<unsigned> gpu;  // unknown when neither the line nor the status maps it
  std::string pci_bus_id;
  int xid = 0;
  Severity severity = Severity::kWarning;  // from cardiac's Xid catalog
  std::string text;  // "job 7: GPU 1 (0000:2a:00.0) Xid 79 GPU has fallen off the bus"
};

// "00000000:2A:00.0" and "0000:2a:00.0" alike: bus, device and function in lower case.
std::string bus_key(std::string bus);

// The Xid events of `events` (the agent's events array) between `start` and `end` (one second
// of slack at each end: the kernel stamps a line before the agent reads it) on one of `gpus`
// (nullopt: every GPU), oldest first. An event without a GPU index is mapped through `status`
// (the agent's status document: gpus[].index and pci_bus_id); one that stays unknown counts
// for the job, since it happened on the job's node. Malformed entries are skipped.
std::vector<JobXid> job_xids(const nlohmann::json& events, const nlohmann::json& status,
                             TimeNs start, TimeNs end,
                             const std::optional<std::set<unsigned>>& gpus, const std::string& job);

}  // namespace cardiac::slurm
