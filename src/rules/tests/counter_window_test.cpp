// SPDX-License-Identifier: Apache-2.0
// The runs of equal values answer as every sample did: against a plain list of samples on
// random counters (steps, resets, long flat stretches) with the window sliding as rules slide it.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <utility>

#include "rules/counter_window.h"

namespace cardiac::rules {
namespace {

using Samples = std::deque<std::pair<TimeNs, double>>;

double every_sample_increase(const Samples& h) {
  double inc = 0;
  for (std::size_t i = 1; i < h.size(); ++i) {
    const double d = h[i].second - h[i - 1].second;
    inc += d >= 0 ? d : h[i].second;
  }
  return inc;
}

TEST(CounterWindow, AnswersAsEverySampleDid) {
  std::mt19937_64 rng(7);
  for (int run = 0; run < 200; ++run) {
    CounterWindow w;
    Samples all;
    const TimeNs window = static_cast<TimeNs>(1 + rng() % 50) * kNsPerSec;
    double value = 0;
    for (int i = 0; i < 500; ++i) {
      const TimeNs t = static_cast<TimeNs>(i) * kNsPerSec;
      const auto roll = rng() % 100;
      if (roll < 5) {
        value = 0;  // a reset
      } else if (roll < 15) {
        value += static_cast<double>(1 + rng() % 3);
      }
      if (i == 0 && rng() % 2 == 0) {  // a counter read from zero, as rules add it
        w.push(t, 0.0);
        all.emplace_back(t, 0.0);
      }
      w.push(t, value);
      all.emplace_back(t, value);
      w.prune(t - window);
      while (!all.empty() && all.front().first < t - window) all.pop_front();
      ASSERT_EQ(w.has_two(), all.size() >= 2) << "run " << run << " i " << i;
      if (all.size() < 2) continue;
      ASSERT_DOUBLE_EQ(w.increase(), every_sample_increase(all)) << "run " << run << " i " << i;
      const Samples last(all.end() - 2, all.end());
      ASSERT_DOUBLE_EQ(w.last_increase(), every_sample_increase(last));
    }
  }
}

TEST(CounterWindow, AFlatHourIsOneRun) {
  CounterWindow w;
  for (int i = 0; i < 3600; ++i) {
    w.push(static_cast<TimeNs>(i) * kNsPerSec, 42);
    w.prune(static_cast<TimeNs>(i - 3600) * kNsPerSec);
  }
  EXPECT_EQ(w.runs(), 1u);
  EXPECT_TRUE(w.has_two());
  EXPECT_EQ(w.increase(), 0);
  w.push(3600 * kNsPerSec, 45);
  EXPECT_EQ(w.runs(), 2u);
  EXPECT_EQ(w.increase(), 3);
  EXPECT_EQ(w.last_increase(), 3);
  w.push(3601 * kNsPerSec, 2);  // a reset counts what it reads
  EXPECT_EQ(w.increase(), 5);
}

}  // namespace
}  // namespace cardiac::rules
