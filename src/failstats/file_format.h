// SPDX-License-Identifier: Apache-2.0
// The `cardiac.failure-stats/v1` file (docs/stats.md) and the CSV rows of a report.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "failstats/stats.h"

namespace cardiac::failstats {

inline constexpr std::string_view kFormat = "cardiac.failure-stats/v1";

// The raw counts, exposures and repair sums (what a reader merges), and under "derived" the
// figures computed from them (what a person reads; ignored when read back).
[[nodiscard]] nlohmann::json to_json(const FailureStats& s);

// Reads what to_json wrote. `where` (a file name) leads every error, which names the field:
// "a.json: classes.gpu_lost.count: expected a whole number >= 0".
[[nodiscard]] Result<FailureStats> from_json(const nlohmann::json& j, std::string_view where);

// Parses `text` as JSON, then from_json.
[[nodiscard]] Result<FailureStats> parse_stats(std::string_view text, std::string_view where);

// The header and one row per class, node or GPU, then the overall row (docs/stats.md lists the
// columns). Numbers that do not exist (no exposure, no repairs) are empty cells.
[[nodiscard]] std::string to_csv(const FailureStats& s, By by);

}  // namespace cardiac::failstats
