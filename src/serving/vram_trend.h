// SPDX-License-Identifier: Apache-2.0
// Is a GPU process's memory growing steadily, and when does it run out? A robust line through
// the process's used memory over a window (Theil–Sen: the median of the pairwise slopes, so a
// single step or spike does not tilt it), judged by R², span and total growth, so that noise
// and a one-off allocation (a framework warming its cache, a model loading) never project an
// out-of-memory time.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace cardiac::serving {

using Series = std::vector<std::pair<TimeNs, double>>;  // (time, bytes), oldest first

struct LineFit {
  double slope_per_s = 0;  // bytes per second
  double intercept = 0;    // bytes at the first point's time
  double r2 = 0;           // of the line against the points (1 for a perfect line)
};

// Theil–Sen over the points (at most kMaxFitPoints are used, evenly thinned). Unset with fewer
// than two distinct instants.
std::optional<LineFit> theil_sen(const Series& points);
inline constexpr std::size_t kMaxFitPoints = 64;

struct GrowthCriteria {
  DurationNs min_span = 10 * 60 * kNsPerSec;      // the window the points must cover
  double min_growth_bytes = 256.0 * 1024 * 1024;  // growth over that window, by the fitted line
  double min_r2 = 0.8;                            // how well a line explains the points
  std::size_t min_points = 6;
  // Steady growth means more than one step: the last half of the window must grow too (by at
  // least a quarter of the whole growth), so a single allocation at the start never fires.
  double min_late_fraction = 0.25;
};

struct Growth {
  LineFit fit;
  DurationNs span = 0;
  double first_bytes = 0;
  double last_bytes = 0;
  double grown_bytes = 0;  // by the fitted line over the span
};

// Steady growth, or unset (flat, shrinking, noisy, too short, or a single step).
std::optional<Growth> steady_growth(const Series& points, const GrowthCriteria& c = {});

// Seconds until `free_bytes` is used up at the growth rate; unset when it does not grow.
std::optional<double> seconds_to_oom(const Growth& g, double free_bytes);

}  // namespace cardiac::serving
