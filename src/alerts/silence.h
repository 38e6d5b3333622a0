// SPDX-License-Identifier: Apache-2.0
// Silences: `key=value` matchers over an alert's rule, severity and labels, valid for a time span.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "rules/sample_view.h"

namespace cardiac::alerts {

// One equality condition. The key "rule" (also accepted as "alertname", stored as "rule") is the
// rule name, "severity" the severity name ("warning"), any other key a label ("gpu", "mount").
struct Matcher {
  std::string key;
  std::string value;
  bool operator==(const Matcher&) const = default;
};
using Matchers = std::vector<Matcher>;

// Parses "key=value[,key=value...]": at least one pair, each key once, no empty values. Only
// equality: "=~" and "!=" are refused by name rather than read as odd values, because a silence
// that silently matches nothing is worse than an error.
[[nodiscard]] Result<Matchers> parse_matchers(std::string_view text);

// The canonical text, "rule=gpu_hot,gpu=0", which parse_matchers() reads back.
std::string matchers_text(const Matchers& matchers);

// True when every matcher holds for this alert.
bool matches(const Matchers& matchers, std::string_view rule, std::string_view severity,
             const rules::Labels& labels);

struct Silence {
  std::int64_t id = 0;  // set by the store
  Matchers matchers;
  TimeNs starts_ns = 0;
  TimeNs ends_ns = 0;  // exclusive; expiring early moves it to "now"
  std::string created_by;
  std::string comment;
  TimeNs created_ns = 0;

  [[nodiscard]] bool active(TimeNs now) const { return starts_ns <= now && now < ends_ns; }
};

// Matchers as JSON, [["rule", "gpu_hot"], ["gpu", "0"]], for the `silences.matchers_json` column.
std::string matchers_to_json(const Matchers& matchers);
[[nodiscard]] Result<Matchers> matchers_from_json(std::string_view json);

}  // namespace cardiac::alerts
