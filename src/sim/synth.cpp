// SPDX-License-Identifier: Apache-2.0
// Synthetic workload generator: fitted run-time and size distributions, Poisson arrivals.
#include "sim/synth.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <random>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::sim {
namespace {

struct Preset {
  std::string_view name;
  double mean_s, median_s, max_s;  // avg/med/max_run_time_gpu
  double mean_gpus, median_gpus;   // avg/med_gpu_num
  unsigned max_gpus;               // max_gpu
};

// Copied from AcmeTrace data/cluster_summary.csv (tests/fixtures/traces/acme_cluster_summary.csv);
// a test checks them against that file. PAI is left out: its median of 0.5 GPUs is a share.
constexpr std::array<Preset, 4> kPresets = {{
    {"seren", 1414.335, 122.0, 1209604.0, 5.68, 1.0, 1024},
    {"kalos", 1259.689, 124.0, 625740.0, 26.77, 1.0, 1024},
    {"philly", 18006.055, 874.0, 4240676.0, 1.928, 1.0, 128},
    {"helios", 6651.681, 206.0, 4320009.0, 3.716, 1.0, 2048},
}};

// How far the GPU-count CDF must stay from 1/2 on both sides of the median, so that the sample
// median of a large trace is the target and not its neighbour.
constexpr double kMedianMargin = 0.05;

Error bad(std::string_view field, std::string message) {
  return Error::invalid(fmt::format("field '{}': {}", field, std::move(message)), "synth params");
}

double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// Mean of exp(N(mu, sigma^2)) with values above `cap` set to `cap`.
double clamped_lognormal_mean(double mu, double sigma, double cap) {
  if (sigma <= 0) return std::min(std::exp(mu), cap);
  const double z = (std::log(cap) - mu) / sigma;
  return std::exp(mu + sigma * sigma / 2) * normal_cdf(z - sigma) + cap * normal_cdf(-z);
}

Status fit_duration(const SynthParams& p, SynthFit& fit) {
  if (!(p.median_duration_s > 0)) return fail(bad("median_duration_s", "must be > 0"));
  if (!(p.mean_duration_s >= p.median_duration_s)) {
    return fail(bad("mean_duration_s", "a log-normal needs mean >= median"));
  }
  if (!(p.max_duration_s >= 0)) return fail(bad("max_duration_s", "must be >= 0 (0: no cut)"));
  fit.mu = std::log(p.median_duration_s);
  fit.closed_form_sigma = std::sqrt(2 * std::log(p.mean_duration_s / p.median_duration_s));
  fit.sigma = fit.closed_form_sigma;
  if (p.max_duration_s == 0) return {};
  if (p.max_duration_s <= p.median_duration_s) {
    return fail(bad("max_duration_s", "must exceed median_duration_s"));
  }
  // The cut lowers the mean, so sigma is refit on the clamped distribution. Its mean first rises
  // with sigma towards max/2; scan for the first step past the target, then bisect that step.
  const double cap = p.max_duration_s, target = p.mean_duration_s;
  double lo = 0, hi = 0;
  // A coarse scan that the bisection below refines; its running sum is part of the fit.
  // NOLINTNEXTLINE(bugprone-float-loop-counter)
  for (double s = 0.01; s <= 30; s += 0.01) {
    if (clamped_lognormal_mean(fit.mu, s, cap) >= target) {
      hi = s;
      break;
    }
    lo = s;
  }
  if (hi == 0) {
    return fail(bad("mean_duration_s", fmt::format("unreachable under the cut at {} s", cap)));
  }
  for (int i = 0; i < 100; ++i) {
    double mid = (lo + hi) / 2;
    (clamped_lognormal_mean(fit.mu, mid, cap) < target ? lo : hi) = mid;
  }
  fit.sigma = (lo + hi) / 2;
  return {};
}

// Power law on the size index: weight exp(i * log_ratio), plus `atom` extra mass on size j.
// Shifting the exponents keeps the largest weight at 1, so no weight overflows.
void size_probs(const std::vector<unsigned>& sizes, double log_ratio, double atom, std::size_t j,
                std::vector<double>& probs) {
  const double n = static_cast<double>(sizes.size());
  const double shift = log_ratio > 0 ? (n - 1) * log_ratio : 0;
  probs.assign(sizes.size(), 0);
  double total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    total += (probs[i] = std::exp(static_cast<double>(i) * log_ratio - shift));
  }
  for (double& pr : probs) pr = (1 - atom) * pr / total;
  probs[j] += atom;
}

double size_mean(const std::vector<unsigned>& sizes, const std::vector<double>& probs) {
  double m = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) m += probs[i] * sizes[i];
  return m;
}

Status fit_sizes(const SynthParams& p, SynthFit& fit) {
  if (p.max_gpus == 0) return fail(bad("max_gpus", "must be >= 1"));
  fit.sizes.clear();
  for (unsigned s = 1; s <= p.max_gpus; s *= 2) {
    fit.sizes.push_back(s);
    if (s > p.max_gpus / 2) break;  // the next doubling would pass max_gpus (or overflow)
  }
  if (fit.sizes.back() != p.max_gpus) fit.sizes.push_back(p.max_gpus);
  auto at = std::find(fit.sizes.begin(), fit.sizes.end(), p.median_gpus);
  if (at == fit.sizes.end()) {
    return fail(bad("median_gpus", fmt::format("must be one of {}, got {}",
                                               fmt::join(fit.sizes, ", "), p.median_gpus)));
  }
  const auto j = static_cast<std::size_t>(at - fit.sizes.begin());
  if (!(p.mean_gpus >= 1 && p.mean_gpus <= p.max_gpus)) {
    return fail(bad("mean_gpus", fmt::format("must be from 1 to max_gpus {}", p.max_gpus)));
  }
  if (fit.sizes.size() == 1) {
    fit.probs = {1.0};
    return {};
  }
  // The smallest median atom for which the power law, refit to the mean, puts the median in place.
  for (int step = 0; step < 1000; ++step) {
    const double atom = step / 1000.0;
    const double tail_mean = (p.mean_gpus - atom * p.median_gpus) / (1 - atom);
    if (tail_mean <= fit.sizes.front() || tail_mean >= fit.sizes.back()) continue;
    double lo = -40, hi = 40;  // log(ratio); the mean rises with the ratio
    for (int i = 0; i < 200; ++i) {
      double mid = (lo + hi) / 2;
      size_probs(fit.sizes, mid, 0, j, fit.probs);
      (size_mean(fit.sizes, fit.probs) < tail_mean ? lo : hi) = mid;
    }
    const double log_ratio = (lo + hi) / 2;
    size_probs(fit.sizes, log_ratio, atom, j, fit.probs);
    double below = 0;
    for (std::size_t i = 0; i < j; ++i) below += fit.probs[i];
    if (below <= 0.5 - kMedianMargin && below + fit.probs[j] >= 0.5 + kMedianMargin) {
      fit.size_ratio = std::exp(log_ratio);
      fit.median_atom = atom;
      return {};
    }
  }
  return fail(bad("mean_gpus", fmt::format("no size distribution has median {} and mean {}",
                                           p.median_gpus, p.mean_gpus)));
}

// Samplers on the raw 64-bit output, whose sequence the standard fixes (unlike the
// std::*_distribution classes, whose algorithms are left to the library).
class Sampler {
 public:
  explicit Sampler(std::uint64_t seed) : rng_(seed) {}
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1p-53; }  // [0, 1)
  double exponential() { return -std::log1p(-uniform()); }                  // mean 1
  double normal() {  // Marsaglia's polar method
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0, v = 0, s = 0;
    do {
      u = 2 * uniform() - 1;
      v = 2 * uniform() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    const double f = std::sqrt(-2 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }
  // Index into a cumulative table whose last entry is 1.
  std::size_t pick(const std::vector<double>& cdf) {
    auto it = std::upper_bound(cdf.begin(), cdf.end(), uniform());
    return std::min(static_cast<std::size_t>(it - cdf.begin()), cdf.size() - 1);
  }

 private:
  std::mt19937_64 rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

std::vector<double> cumulative(const std::vector<double>& probs) {
  std::vector<double> cdf(probs.size());
  double sum = 0;
  for (std::size_t i = 0; i < probs.size(); ++i) cdf[i] = (sum += probs[i]);
  for (double& c : cdf) c /= sum;
  return cdf;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

void assign_number(std::string& out, char prefix, std::uint64_t n) {
  char buf[24];
  buf[0] = prefix;
  auto end = std::to_chars(buf + 1, buf + sizeof buf, n).ptr;
  out.assign(buf, end);
}

}  // namespace

Result<SynthParams> synth_preset(std::string_view name) {
  const std::string key = to_lower(name);
  for (const Preset& pr : kPresets) {
    if (pr.name != key) continue;
    SynthParams p;
    p.name = std::string(pr.name);
    p.mean_duration_s = pr.mean_s;
    p.median_duration_s = pr.median_s;
    p.max_duration_s = pr.max_s;
    p.mean_gpus = pr.mean_gpus;
    p.median_gpus = pr.median_gpus;
    p.max_gpus = pr.max_gpus;
    p.target_load = 0.7;
    p.cluster_gpus = pr.max_gpus;
    return p;
  }
  return fail(Error::invalid(
      fmt::format("unknown synth preset '{}' (seren, kalos, philly, helios)", name)));
}

Result<SynthFit> fit_synth(const SynthParams& p) {
  if (p.jobs == 0) return fail(bad("jobs", "must be > 0"));
  if (p.users == 0) return fail(bad("users", "must be >= 1"));
  if (!(p.user_zipf_s >= 0)) return fail(bad("user_zipf_s", "must be >= 0"));
  if (p.target_load > 0) {
    if (p.cluster_gpus == 0) return fail(bad("cluster_gpus", "target_load needs a cluster size"));
  } else if (!(p.arrival_rate_per_hour > 0) && !(p.days > 0)) {
    return fail(bad("target_load", "set one of target_load, arrival_rate_per_hour or days"));
  }
  SynthFit fit;
  CARDIAC_TRY(fit_duration(p, fit));
  CARDIAC_TRY(fit_sizes(p, fit));
  return fit;
}

Trace synthesize(const SynthParams& p, std::uint64_t seed) {
  Trace trace;
  trace.source = "synth:" + p.name;
  auto fit = fit_synth(p);
  if (!fit) {
    trace.notes.push_back(fit.error().what());
    return trace;
  }
  const std::vector<double> size_cdf = cumulative(fit->probs);
  std::vector<double> user_weights(p.users);
  for (unsigned k = 0; k < p.users; ++k) user_weights[k] = std::pow(k + 1.0, -p.user_zipf_s);
  const std::vector<double> user_cdf = cumulative(user_weights);
  const double cap_s = p.max_duration_s > 0 ? p.max_duration_s : 9.2e9;

  // Attributes and arrivals use separate streams, so the jobs do not change with the arrival mode.
  Sampler attrs(seed);
  trace.jobs.resize(p.jobs);
  double gpu_seconds = 0;
  for (std::size_t k = 0; k < p.jobs; ++k) {
    TraceJob& job = trace.jobs[k];
    job.id = static_cast<std::int64_t>(k);
    assign_number(job.name, 'j', k);
    job.gpus = fit->sizes[attrs.pick(size_cdf)];
    const double secs = std::min(std::exp(fit->mu + fit->sigma * attrs.normal()), cap_s);
    job.duration = std::llround(secs * 1e9);
    assign_number(job.user, 'u', attrs.pick(user_cdf) + 1);
    job.time_limit = p.max_duration_s > 0 ? std::llround(p.max_duration_s * 1e9) : 0;
    gpu_seconds += secs * job.gpus;
  }

  const std::uint64_t arrival_seed = splitmix64(seed);
  if (p.target_load <= 0 && p.arrival_rate_per_hour > 0) {
    Sampler gaps(arrival_seed);
    double t_s = 0;
    for (TraceJob& job : trace.jobs) {
      t_s += gaps.exponential() * 3600.0 / p.arrival_rate_per_hour;
      job.submit = std::llround(t_s * 1e9);
    }
    return trace;
  }
  // n Poisson arrivals conditioned to fall in [0, span] are n sorted uniforms: the first n of
  // n + 1 exponential partial sums, scaled by the last one. Two passes over the same stream
  // avoid a buffer.
  const double span_s =
      p.target_load > 0 ? gpu_seconds / (p.target_load * p.cluster_gpus) : p.days * 86400.0;
  double total = 0;
  Sampler first(arrival_seed);
  for (std::size_t k = 0; k <= p.jobs; ++k) total += first.exponential();
  Sampler again(arrival_seed);
  double partial = 0;
  for (TraceJob& job : trace.jobs) {
    partial += again.exponential();
    job.submit = std::llround(partial / total * span_s * 1e9);
  }
  return trace;
}

}  // namespace cardiac::sim
