// SPDX-License-Identifier: Apache-2.0
// A reader of the Prometheus text exposition format (version 0.0.4), enough to take gauges and
// counters from an inference engine's /metrics: `name{label="value",…} value [timestamp]`,
// comments and HELP/TYPE lines skipped, label values unescaped, NaN and ±Inf accepted. A line
// it cannot read is an error naming the line, never a sample silently dropped.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cardiac::serving {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// At most this many samples are read from one exposition (a vLLM server exposes a few
// thousand lines, mostly histogram buckets); more is an error, not an unbounded allocation.
inline constexpr std::size_t kMaxPromSamples = 100'000;

// `origin` names the text in errors ("http://127.0.0.1:8000/metrics").
Result<std::vector<PromSample>> parse_prom_text(std::string_view text, std::string_view origin);

}  // namespace cardiac::serving
