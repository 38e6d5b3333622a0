// SPDX-License-Identifier: Apache-2.0
// Exact confidence intervals for Poisson counts, through the chi-square (gamma) quantiles: right
// for the small counts a fleet's failure classes have, where the normal approximation is not.
#pragma once

namespace cardiac::failstats {

// Regularized lower incomplete gamma P(a, x), a > 0, x >= 0.
[[nodiscard]] double gamma_p(double a, double x);

// The x with gamma_p(a, x) = p, for a > 0 and p in [0, 1).
[[nodiscard]] double gamma_p_inverse(double a, double p);

// The chi-square quantile: chi2(df) / 2 is gamma(df / 2).
[[nodiscard]] double chi_square_quantile(double df, double p);

struct Interval {
  double low = 0;
  double high = 0;
};

// Garwood's exact interval for the mean of a Poisson count k at the given confidence:
// [chi2(alpha/2; 2k) / 2, chi2(1 - alpha/2; 2k + 2) / 2], low 0 for k = 0. Counts, not rates:
// divide by the exposure for a rate interval.
[[nodiscard]] Interval poisson_interval(double k, double confidence = 0.95);

}  // namespace cardiac::failstats
