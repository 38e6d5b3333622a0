// SPDX-License-Identifier: Apache-2.0
// The round trip: a fleet simulated with a known model, its failure history exported as a stats
// file, read back and refitted; the fitted model must agree with the truth within the intervals.
#include "failstats/fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "failstats/file_format.h"
#include "failstats/from_sim.h"

namespace cardiac::failstats {
namespace {

constexpr DurationNs kFitHour = 3600 * kNsPerSec;
constexpr TimeNs kYear = 365 * 24 * kFitHour;

sim::FailureModel truth() {
  sim::FailureModel m;
  m.name = "truth";
  m.components = {
      {"GPU off the bus", "GPU", 2.0e-4, sim::Scope::kGpu, 48 * kFitHour},
      {"GPU reset", "GPU", 1.0e-4, sim::Scope::kGpu, 4 * kFitHour},
      {"GPU HBM memory", "GPU", 1.5e-4, sim::Scope::kGpu, 19 * kFitHour},
      {"GPU thermal", "GPU", 0.5e-4, sim::Scope::kGpu, 24 * kFitHour},
      {"Power supply", "Host", 1.0e-4, sim::Scope::kNode, 24 * kFitHour},
      {"IB link", "Network", 0.8e-4, sim::Scope::kNode, 4 * kFitHour},
      {"Software bug", "Dependency", 1.0e-4, sim::Scope::kJob, 0},
      {"Faulty GPU", "GPU", 0.7e-4, sim::Scope::kGpu, 48 * kFitHour},
  };
  m.lemon_fraction = 0.05;
  m.lemon_factor = 10;
  m.repair_sigma = 1.0;
  return m;
}

// P(X <= k) for X ~ Poisson(mean).
double poisson_cdf(double k, double mean) {
  return 1.0 - gamma_p(k + 1, mean);
}

// The central 95 % range of a Poisson count.
Interval poisson_range(double mean) {
  double low = 0;
  while (poisson_cdf(low, mean) < 0.025) ++low;
  double high = low;
  while (poisson_cdf(high, mean) < 0.975) ++high;
  return {low, high};
}

TEST(RoundTrip, FittedRatesAndRepairsMatchTheSimulatedTruth) {
  const sim::FailureModel model = truth();
  const sim::Topology topo{.nodes = 200, .gpus_per_node = 8, .nodes_per_domain = 16};
  FailureStats exported = stats_from_simulation(model, topo, 7, kYear);
  ASSERT_DOUBLE_EQ(exported.gpu_days, 200.0 * 8 * 365);
  // Through the file, as a fleet would hand it over.
  auto back = parse_stats(to_json(exported).dump(), "fleet.json");
  ASSERT_TRUE(back) << back.error().what();
  auto fitted = fit_model(*back);
  ASSERT_TRUE(fitted) << fitted.error().what();
  ASSERT_EQ(fitted->components.size(), model.components.size());

  for (const sim::Component& want : model.components) {
    const FaultClass c = classify_component(want);
    const auto i = static_cast<std::size_t>(c);
    const auto got =
        std::find_if(fitted->components.begin(), fitted->components.end(),
                     [&](const sim::Component& x) { return x.name == class_title(c); });
    ASSERT_NE(got, fitted->components.end()) << want.name;
    EXPECT_EQ(got->scope, class_scope(c));
    const double count = static_cast<double>(back->counts[i]);
    const double mean = want.per_gpu_day * back->gpu_days;
    // The fitted rate within the 95 % range of the true one...
    Interval range = poisson_range(mean);
    EXPECT_GE(count, range.low) << want.name << ": expected about " << mean;
    EXPECT_LE(count, range.high) << want.name << ": expected about " << mean;
    // ...and the true rate within the fitted rate's 95 % interval.
    Interval ci = poisson_interval(count);
    EXPECT_GE(want.per_gpu_day, ci.low / back->gpu_days) << want.name;
    EXPECT_LE(want.per_gpu_day, ci.high / back->gpu_days) << want.name;
    EXPECT_DOUBLE_EQ(got->per_gpu_day, count / back->gpu_days);
    if (want.scope == sim::Scope::kJob) {
      EXPECT_EQ(got->repair, 0);
      continue;
    }
    // The mean of n log-normal repairs has a relative spread of sqrt(e^(s^2) - 1) / sqrt(n).
    const double n = static_cast<double>(back->repairs[i].n);
    ASSERT_GT(n, 0) << want.name;
    const double spread = std::sqrt(std::expm1(model.repair_sigma * model.repair_sigma) / n);
    EXPECT_NEAR(static_cast<double>(got->repair) / static_cast<double>(want.repair), 1.0,
                3 * spread)
        << want.name;
  }
  EXPECT_NEAR(fitted->repair_sigma, model.repair_sigma, 0.1);
  // Lemons: 10 of 200 nodes at 10x; the estimate is rough but in the right place.
  EXPECT_GE(fitted->lemon_fraction, 0.03);
  EXPECT_LE(fitted->lemon_fraction, 0.08);
  EXPECT_GE(fitted->lemon_factor, 5);
  EXPECT_LE(fitted->lemon_factor, 20);
  EXPECT_TRUE(sim::validate_model(*fitted));
}

TEST(RoundTrip, AFleetWithoutLemonsGetsNone) {
  // Ranked Poisson counts always look uneven: only overdispersion may call a node a lemon.
  sim::FailureModel model = truth();
  model.lemon_fraction = 0;
  model.lemon_factor = 1;
  const sim::Topology topo{.nodes = 250, .gpus_per_node = 8, .nodes_per_domain = 16};
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    auto fitted = fit_model(stats_from_simulation(model, topo, seed, kYear));
    ASSERT_TRUE(fitted);
    EXPECT_EQ(fitted->lemon_fraction, 0) << "seed " << seed;
    EXPECT_EQ(fitted->lemon_factor, 1) << "seed " << seed;
  }
}

TEST(RoundTrip, IsDeterministicForASeed) {
  const sim::Topology topo{.nodes = 20, .gpus_per_node = 8, .nodes_per_domain = 16};
  auto a = to_json(stats_from_simulation(truth(), topo, 3, kYear / 4));
  auto b = to_json(stats_from_simulation(truth(), topo, 3, kYear / 4));
  EXPECT_EQ(a, b);
  auto c = to_json(stats_from_simulation(truth(), topo, 4, kYear / 4));
  EXPECT_NE(a, c);
}

TEST(Fit, ZeroExposureIsRefusedWithAReason) {
  FailureStats s;
  s.counts[0] = 3;
  auto m = fit_model(s);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().what().find("no exposure"), std::string::npos) << m.error().what();
}

// A repair mean past what nanoseconds hold was converted anyway and came out negative
// (fuzz/crashes-found/failstats-repair-1e7-hours).
TEST(Fit, ARepairMeanOverTenYearsIsRefusedWithAReason) {
  FailureStats s;
  s.gpu_days = 1;
  s.gpus = 1;
  const auto lost = static_cast<std::size_t>(FaultClass::kGpuLost);
  s.counts[lost] = 1;
  s.repairs[lost].add(1e7);
  auto m = fit_model(s);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().what().find("class gpu_lost is 1e+07 hours"), std::string::npos)
      << m.error().what();
  s.repairs[lost] = {};
  s.repairs[lost].add(kMaxRepairHours);  // ten years exactly still fits
  auto at_limit = fit_model(s);
  ASSERT_TRUE(at_limit) << at_limit.error().what();
  EXPECT_EQ(at_limit->components[0].repair,
            static_cast<DurationNs>(kMaxRepairHours) * 3600 * kNsPerSec);
  // Software failures take no hardware out: their repair times are not used.
  const auto software = static_cast<std::size_t>(FaultClass::kSoftware);
  s.counts[software] = 1;
  s.repairs[software].add(1e7);
  EXPECT_TRUE(fit_model(s));
}

TEST(Fit, AClassWithoutRepairsTakesThePooledMean) {
  FailureStats s;
  s.gpu_days = 1000;
  s.gpus = 8;
  s.counts[static_cast<std::size_t>(FaultClass::kGpuLost)] = 2;
  s.repairs[static_cast<std::size_t>(FaultClass::kGpuLost)].add(2);
  s.repairs[static_cast<std::size_t>(FaultClass::kGpuLost)].add(6);
  s.counts[static_cast<std::size_t>(FaultClass::kNode)] = 1;  // still open
  auto m = fit_model(s);
  ASSERT_TRUE(m) << m.error().what();
  ASSERT_EQ(m->components.size(), 2u);
  EXPECT_EQ(m->components[0].repair, 4 * kFitHour);
  EXPECT_EQ(m->components[1].repair, 4 * kFitHour);
  EXPECT_EQ(m->components[1].scope, sim::Scope::kNode);
  EXPECT_DOUBLE_EQ(m->components[0].per_gpu_day, 0.002);
  EXPECT_NEAR(m->repair_sigma, std::log(3.0) / 2, 1e-12);
  EXPECT_EQ(m->lemon_fraction, 0);
}

}  // namespace
}  // namespace cardiac::failstats
