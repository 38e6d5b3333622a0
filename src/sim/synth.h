// SPDX-License-Identifier: Apache-2.0
// Synthetic GPU workloads calibrated on published cluster summaries, deterministic per seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/trace.h"

namespace cardiac::sim {

// What to generate. Arrivals come from the first of these that is set: target_load (with
// cluster_gpus), then arrival_rate_per_hour, then days.
struct SynthParams {
  std::string name = "custom";  // shows in Trace::source as "synth:<name>"
  std::size_t jobs = 10'000;
  // Offered GPU-hours / (cluster_gpus * span) = target_load, span from the generated jobs.
  double target_load = 0;
  unsigned cluster_gpus = 0;
  double arrival_rate_per_hour = 0;  // a Poisson process of this rate
  double days = 0;                   // the jobs spread uniformly at random over this many days
  // Run time: log-normal with this median and mean, cut at max_duration_s (a time limit).
  double mean_duration_s = 0, median_duration_s = 0, max_duration_s = 0;
  // GPUs per job: powers of two up to max_gpus (plus max_gpus itself when it is not one).
  double mean_gpus = 1, median_gpus = 1;
  unsigned max_gpus = 1;
  unsigned users = 100;      // named u1..uN
  double user_zipf_s = 1.0;  // P(user k) proportional to 1 / k^s
};

// The fitted distributions, for inspection and the calibration table.
struct SynthFit {
  double mu = 0, sigma = 0;      // of ln(duration in seconds), before the cut at the max
  double closed_form_sigma = 0;  // sqrt(2 ln(mean/median)): the fit without the cut
  std::vector<unsigned> sizes;   // GPU counts, ascending
  std::vector<double> probs;     // their probabilities
  double size_ratio = 0;         // P(size i) of the power-law part is proportional to ratio^i
  double median_atom = 0;        // extra probability put on the median size
};

// Presets calibrated on the AcmeTrace cluster summaries: "seren", "kalos", "philly", "helios"
// (case-insensitive). They set the GPU-job run time and size targets, jobs = 10,000 and
// target_load = 0.7 on cluster_gpus = max_gpus; callers usually override jobs and the cluster.
[[nodiscard]] Result<SynthParams> synth_preset(std::string_view name);

// Checks the parameters and fits the distributions; an error names the offending field.
[[nodiscard]] Result<SynthFit> fit_synth(const SynthParams& params);

// Generates params.jobs jobs. Identical output for identical (params, seed) on the same libm.
// Invalid params give an empty trace whose notes hold the error from fit_synth.
[[nodiscard]] Trace synthesize(const SynthParams& params, std::uint64_t seed);

}  // namespace cardiac::sim
