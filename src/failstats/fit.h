// SPDX-License-Identifier: Apache-2.0
// The simulator's failure model fitted from failure statistics (one file or many merged).
#pragma once

#include "core/result.h"
#include "failstats/stats.h"
#include "sim/failures.h"

namespace cardiac::failstats {

// Repair mean of a class with no repair time of its own and none in any other class.
inline constexpr double kDefaultRepairHours = 24;
// From failure to the scheduler knowing, as the presets assume (one 5-minute health check).
inline constexpr DurationNs kFittedDetection = DurationNs{5} * 60 * kNsPerSec;
// The longest mean repair time a fitted component takes: ten years. No hardware is out that
// long, and the simulator adds repair times to its clock (int64 nanoseconds, ~292 years).
inline constexpr double kMaxRepairHours = 10 * 365 * 24;

// One component per class with incidents: per_gpu_day = count / GPU-days, the class's scope and
// category (classes.h), repair = the class's mean repair time (a class without repair times
// takes the mean over all classes). repair_sigma: the log-normal sigma pooled over the classes
// (each class about its own mean log). Lemons from estimate_lemons(). No correlated failures
// and no planned maintenance: per-node statistics do not show them. Refuses statistics with no
// exposure (no rate can be derived), and a class whose mean repair time is over
// kMaxRepairHours, with an error saying so; a rate that is not a finite number fails the
// model's validation.
[[nodiscard]] Result<sim::FailureModel> fit_model(const FailureStats& s);

}  // namespace cardiac::failstats
