// SPDX-License-Identifier: Apache-2.0
#include "serving/vram_trend.h"

#include <algorithm>
#include <cmath>

namespace cardiac::serving {
namespace {

double median(std::vector<double>& v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  }
  return m;
}

// Evenly spaced indices so that a long series costs at most kMaxFitPoints² / 2 slopes.
Series thinned(const Series& points) {
  if (points.size() <= kMaxFitPoints) return points;
  Series out;
  out.reserve(kMaxFitPoints);
  const double step =
      static_cast<double>(points.size() - 1) / static_cast<double>(kMaxFitPoints - 1);
  for (std::size_t i = 0; i < kMaxFitPoints; ++i) {
    out.push_back(points[static_cast<std::size_t>(std::lround(static_cast<double>(i) * step))]);
  }
  return out;
}

}  // namespace

std::optional<LineFit> theil_sen(const Series& all) {
  const Series points = thinned(all);
  if (points.size() < 2) return std::nullopt;
  const TimeNs t0 = points.front().first;
  auto secs = [&](TimeNs t) { return static_cast<double>(t - t0) / 1e9; };
  std::vector<double> slopes;
  slopes.reserve(points.size() * (points.size() - 1) / 2);
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      const double dt = secs(points[j].first) - secs(points[i].first);
      if (dt <= 0) continue;
      slopes.push_back((points[j].second - points[i].second) / dt);
    }
  }
  if (slopes.empty()) return std::nullopt;
  LineFit f;
  f.slope_per_s = median(slopes);
  std::vector<double> intercepts;
  intercepts.reserve(points.size());
  double mean = 0;
  for (const auto& [t, v] : points) {
    intercepts.push_back(v - f.slope_per_s * secs(t));
    mean += v;
  }
  f.intercept = median(intercepts);
  mean /= static_cast<double>(points.size());
  double ss_res = 0;
  double ss_tot = 0;
  for (const auto& [t, v] : points) {
    const double e = v - (f.intercept + f.slope_per_s * secs(t));
    ss_res += e * e;
    ss_tot += (v - mean) * (v - mean);
  }
  // A flat series is explained perfectly by a flat line, and not at all by any other.
  if (ss_tot == 0) {
    f.r2 = f.slope_per_s == 0 ? 1 : 0;
  } else {
    f.r2 = 1 - ss_res / ss_tot;
  }
  return f;
}

std::optional<Growth> steady_growth(const Series& points, const GrowthCriteria& c) {
  if (points.size() < std::max<std::size_t>(c.min_points, 2)) return std::nullopt;
  Growth g;
  g.span = points.back().first - points.front().first;
  if (g.span < c.min_span || g.span <= 0) return std::nullopt;
  auto fit = theil_sen(points);
  if (!fit || fit->slope_per_s <= 0 || fit->r2 < c.min_r2) return std::nullopt;
  g.fit = *fit;
  g.first_bytes = points.front().second;
  g.last_bytes = points.back().second;
  g.grown_bytes = fit->slope_per_s * static_cast<double>(g.span) / 1e9;
  if (g.grown_bytes < c.min_growth_bytes) return std::nullopt;
  // The second half grows too: the value at the end against the one at the middle instant.
  const TimeNs mid_t = points.front().first + g.span / 2;
  auto mid = std::lower_bound(points.begin(), points.end(), mid_t,
                              [](const auto& p, TimeNs t) { return p.first < t; });
  if (mid == points.end()) return std::nullopt;
  if (g.last_bytes - mid->second < c.min_late_fraction * g.grown_bytes) return std::nullopt;
  if (g.last_bytes - g.first_bytes < c.min_growth_bytes) return std::nullopt;
  return g;
}

std::optional<double> seconds_to_oom(const Growth& g, double free_bytes) {
  if (g.fit.slope_per_s <= 0) return std::nullopt;
  return std::max(0.0, free_bytes) / g.fit.slope_per_s;
}

}  // namespace cardiac::serving
