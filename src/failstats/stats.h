// SPDX-License-Identifier: Apache-2.0
// Failure statistics of a fleet: incidents counted per class, node and GPU against the exposure
// (GPU-days observed), the repair times kept as sufficient statistics, and the figures derived
// from them (rates with exact intervals, MTBI, MTTR, the log-normal repair fit, lemon nodes).
// Pure: no I/O, no clock. Counts and exposures add, so the statistics of many nodes merge exactly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "failstats/classes.h"
#include "failstats/intervals.h"

namespace cardiac::failstats {

using ClassCounts = std::array<std::uint64_t, kFaultClassCount>;

struct IncidentRecord {
  FaultClass fault_class = FaultClass::kOther;
  TimeNs start = 0;
  std::optional<TimeNs> end;  // back in service; nullopt: still open (no repair time yet)
  std::string gpu;            // a stable id (UUID, else node/index); "" for a whole-node fault
  std::string node;
};

// Repair times in hours: n, sum, sum of logs and of squared logs (what the mean and the
// log-normal fit need, and what merges by addition), plus the times themselves for the median
// and p90.
struct RepairSums {
  std::uint64_t n = 0;
  double sum_hours = 0;
  double sum_log = 0;
  double sum_log2 = 0;
  std::vector<double> hours;

  void add(double repair_hours);
  void merge(const RepairSums& other);
};

struct NodeExposure {
  std::string node;
  unsigned gpus = 0;
  double gpu_days = 0;  // GPU-days observed on this node
};

struct NodeStats {
  std::string node;
  unsigned gpus = 0;
  double gpu_days = 0;
  ClassCounts counts{};
  RepairSums repair;
};

// Only GPUs with an incident are listed; each is taken to have its node's exposure per GPU.
struct GpuStats {
  std::string gpu;
  std::string node;
  double gpu_days = 0;
  ClassCounts counts{};
  RepairSums repair;
};

struct FailureStats {
  TimeNs window_start = 0;
  TimeNs window_end = 0;
  double gpu_days = 0;  // exposure: the sum of the nodes'
  unsigned gpus = 0;
  ClassCounts counts{};
  std::array<RepairSums, kFaultClassCount> repairs{};
  std::uint64_t open = 0;        // incidents without an end: counted, no repair time
  std::vector<NodeStats> nodes;  // sorted by name
  std::vector<GpuStats> gpu_list;
  std::vector<std::string> sources;  // where the figures came from ("store", "sim", files)
};

// Counts `incidents` against the exposure of `nodes` over [start, end). An incident on a node
// the exposure does not list is an error naming it; a repair shorter than a second counts as
// one second (the log-normal needs a positive time). Software failures have no repair time.
[[nodiscard]] Result<FailureStats> tabulate(const std::vector<IncidentRecord>& incidents,
                                            const std::vector<NodeExposure>& nodes, TimeNs start,
                                            TimeNs end);

// Adds `other` into `into`: counts, exposures, repair sums, nodes (same name: summed) and GPUs.
// The window becomes the span of both.
void merge_into(FailureStats& into, const FailureStats& other);

[[nodiscard]] std::uint64_t total(const ClassCounts& c);
[[nodiscard]] std::uint64_t hardware_total(const ClassCounts& c);

// A rate with its exact 95 % interval, per 1,000 GPU-days, and the mean time between incidents
// of one unit of the population (a GPU, a node, the fleet) with the interval that maps onto it.
struct RateFigures {
  std::uint64_t count = 0;
  double gpu_days = 0;
  double per_1000 = 0, per_1000_low = 0, per_1000_high = 0;  // NaN without exposure
  double mtbi_hours = 0, mtbi_low = 0, mtbi_high = 0;        // infinity without incidents
};

// `units`: GPUs the exposure is spread over (1 for a GPU, the node's GPUs, the fleet's GPUs):
// MTBI is 24 × gpu_days / (units × count) hours.
[[nodiscard]] RateFigures rate_figures(std::uint64_t count, double gpu_days, double units);

struct RepairFigures {
  std::uint64_t n = 0;
  double mean_hours = 0, median_hours = 0, p90_hours = 0;  // NaN without repairs
  double mu = 0, sigma = 0;  // log-normal fit (natural log of hours, maximum likelihood)
};

[[nodiscard]] RepairFigures repair_figures(const RepairSums& r);

// The lemon share, in the terms of sim::FailureModel: a fraction of nodes whose hardware hazard is
// `factor` times the others'. First a Poisson dispersion test of the nodes' hardware failures
// against one rate for all (chi-square, N - 1 degrees of freedom): counts no more spread than
// Poisson give no lemons (fraction 0, factor 1). When they are (p < 1 %), the two-rate mixture
// the simulator draws from (each node a lemon with chance f) is fitted by maximum likelihood
// (EM, started from the best split of the nodes ranked by rate): fraction f, factor high / low.
struct Lemons {
  double fraction = 0;
  double factor = 1;
  unsigned nodes = 0;           // lemon nodes, f x N rounded
  double share = 0;             // their expected share of the hardware failures
  double dispersion_p = 1;      // p-value of the dispersion test
  double likelihood_ratio = 0;  // 2 ln(L_mixture / L_one_rate), when fitted
};

inline constexpr double kMaxLemonFactor = 1000;
inline constexpr double kLemonTestLevel = 0.01;
inline constexpr int kLemonIterations = 1000;

[[nodiscard]] Lemons estimate_lemons(const FailureStats& s);

// One row of a report: a class, a node, a GPU or everything.
struct Row {
  std::string key;    // class name, node, GPU id, "all"
  std::string title;  // class title, the GPU's node
  RateFigures rate;
  RepairFigures repair;
};

enum class By { kClass, kNode, kGpu };

[[nodiscard]] std::vector<Row> rows(const FailureStats& s, By by);
[[nodiscard]] Row overall(const FailureStats& s);

}  // namespace cardiac::failstats
