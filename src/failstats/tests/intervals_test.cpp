// SPDX-License-Identifier: Apache-2.0
#include "failstats/intervals.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cardiac::failstats {
namespace {

// Garwood's exact 95 % limits, from published tables (e.g. Ulm 1990, and R's poisson.test).
TEST(PoissonInterval, MatchesTheTablesForSmallCounts) {
  Interval zero = poisson_interval(0);
  EXPECT_EQ(zero.low, 0.0);
  EXPECT_NEAR(zero.high, 3.688879, 1e-5);
  Interval one = poisson_interval(1);
  EXPECT_NEAR(one.low, 0.02531781, 1e-6);
  EXPECT_NEAR(one.high, 5.571643, 1e-5);
  Interval ten = poisson_interval(10);
  EXPECT_NEAR(ten.low, 4.795389, 1e-5);
  EXPECT_NEAR(ten.high, 18.390356, 1e-5);
  Interval hundred = poisson_interval(100);
  EXPECT_NEAR(hundred.low, 81.364, 1e-2);
  EXPECT_NEAR(hundred.high, 121.627, 1e-2);
}

TEST(PoissonInterval, NinetyPercentIsNarrower) {
  Interval i95 = poisson_interval(5);
  Interval i90 = poisson_interval(5, 0.90);
  EXPECT_GT(i90.low, i95.low);
  EXPECT_LT(i90.high, i95.high);
  EXPECT_NEAR(i90.high, 21.026070 / 2, 1e-5);  // chi2(0.95; 12) / 2
}

TEST(ChiSquare, QuantilesMatchTheTables) {
  EXPECT_NEAR(chi_square_quantile(1, 0.95), 3.841459, 1e-5);
  EXPECT_NEAR(chi_square_quantile(1, 0.99), 6.634897, 1e-5);
  EXPECT_NEAR(chi_square_quantile(10, 0.05), 3.940299, 1e-5);
  EXPECT_NEAR(chi_square_quantile(200, 0.975), 241.058, 1e-2);
}

TEST(GammaP, KnownValuesAndItsInverse) {
  EXPECT_NEAR(gamma_p(1, 1), 1 - std::exp(-1.0), 1e-12);  // exponential CDF
  EXPECT_NEAR(gamma_p(0.5, 2), std::erf(std::sqrt(2.0)), 1e-12);
  for (double p : {0.01, 0.3, 0.9, 0.999}) {
    EXPECT_NEAR(gamma_p(7.5, gamma_p_inverse(7.5, p)), p, 1e-9);
  }
  EXPECT_EQ(gamma_p_inverse(3, 0), 0.0);
}

}  // namespace
}  // namespace cardiac::failstats
