// SPDX-License-Identifier: Apache-2.0
// What the doctor reads from an agent's store (`--db`): raw samples regrouped as live samples,
// longer GPU series, the stored kernel events, and the per-process memory book beside it.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "doctor/input.h"
#include "kmsg/record.h"
#include "nvml/gpu.h"
#include "store/db.h"
#include "store/events.h"
#include "store/incidents.h"

namespace cardiac::doctor {

// How far back stored events and the retired-pages series reach: a week (DCGM's "more than one
// new in a week" rule).
inline constexpr DurationNs kStoredEventsLookback = 7 * 24 * 3600 * kNsPerSec;

// The store's raw samples since `since`, one GpuSnapshot per sampling instant.
Result<std::vector<nvml::GpuSnapshot>> snapshots_from_store(const store::Db& db, TimeNs since);
// Stored events turned back into kernel events.
std::vector<kmsg::KernelEvent> events_from_store(const std::vector<store::Event>& stored);
// The temperature over `span` and retired DBE pages over a week, per GPU.
Result<std::vector<GpuHistory>> history_from_store(const store::Db& db, TimeNs now,
                                                   DurationNs span);
// How far back the history checks read incidents: 90 days (the node rule looks at 30, a
// repeat offender's history is shown whole within it).
inline constexpr DurationNs kIncidentLookback = 90 * 24 * 3600 * kNsPerSec;
// The store's fault incidents since `since`, oldest first, as the history checks read them.
Result<std::vector<IncidentRecord>> incidents_from_store(const store::Db& db, TimeNs since);
// The agent's per-process memory book beside the store at `db_path`, into `in.process_vram`;
// none is not an error, a damaged one is noted in `skipped`.
void read_process_book(const std::string& db_path, DoctorInput& in,
                       std::vector<std::string>& skipped);

}  // namespace cardiac::doctor
