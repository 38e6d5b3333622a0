// SPDX-License-Identifier: Apache-2.0
// The incomplete gamma function (series and continued fraction, as in Numerical Recipes) and its
// inverse by bisection: a few hundred evaluations per interval, which a report of tens of rows
// never notices, and no tolerance to tune.
#include "failstats/intervals.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cardiac::failstats {
namespace {

constexpr int kMaxTerms = 1000;
constexpr double kEpsilon = 1e-15;

double series(double a, double x) {
  double term = 1.0 / a;
  double sum = term;
  for (int n = 1; n < kMaxTerms; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * kEpsilon) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) = 1 - P(a, x) by the modified Lentz continued fraction; converges fast for x > a + 1.
double continued_fraction(double a, double x) {
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a;
  double c = 1.0 / kTiny;
  double d = 1.0 / b;
  double h = d;
  for (int i = 1; i < kMaxTerms; ++i) {
    double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < kEpsilon) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double gamma_p(double a, double x) {
  if (!(x > 0)) return 0;
  if (x < a + 1.0) return std::clamp(series(a, x), 0.0, 1.0);
  return std::clamp(1.0 - continued_fraction(a, x), 0.0, 1.0);
}

double gamma_p_inverse(double a, double p) {
  if (!(p > 0)) return 0;
  if (!(p < 1)) return std::numeric_limits<double>::infinity();
  double low = 0;
  double high = std::max(1.0, a);
  while (gamma_p(a, high) < p) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    double mid = (low + high) / 2;
    (gamma_p(a, mid) < p ? low : high) = mid;
  }
  return (low + high) / 2;
}

double chi_square_quantile(double df, double p) {
  return 2.0 * gamma_p_inverse(df / 2.0, p);
}

Interval poisson_interval(double k, double confidence) {
  const double alpha = 1.0 - confidence;
  Interval out;
  out.low = k > 0 ? gamma_p_inverse(k, alpha / 2) : 0.0;
  out.high = gamma_p_inverse(k + 1, 1.0 - alpha / 2);
  return out;
}

}  // namespace cardiac::failstats
