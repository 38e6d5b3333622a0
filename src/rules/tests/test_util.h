// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the rules tests: explicit times, hand-built views, rules from TOML text.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>
#include <vector>

#include "rules/engine.h"
#include "rules/parse.h"

namespace cardiac::rules::testing {

constexpr TimeNs kT0 = 1'700'000'000LL * kNsPerSec;
inline TimeNs at_s(std::int64_t seconds) {
  return kT0 + seconds * kNsPerSec;
}

inline SampleView view(std::initializer_list<Point> points) {
  SampleView v;
  v.points = points;
  return v;
}

inline Labels gpu(int index) {
  return Labels{{"gpu", std::to_string(index)}};
}

inline std::vector<Rule> rules_from(std::string_view toml) {
  auto r = parse_rules(toml, "test.toml");
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().what());
  return r ? *r : std::vector<Rule>{};
}

// Transitions of one rule into `to`.
inline std::size_t count_to(const std::vector<Transition>& ts, AlertState to) {
  std::size_t n = 0;
  for (const auto& t : ts) n += t.to == to ? 1 : 0;
  return n;
}

}  // namespace cardiac::rules::testing
