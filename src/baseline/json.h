// SPDX-License-Identifier: Apache-2.0
// `cardiac.baseline/v1` as JSON (docs/baseline.md).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "baseline/baseline.h"
#include "core/result.h"

namespace cardiac::baseline {

[[nodiscard]] nlohmann::json to_json(const Baseline& b);
// Parses a baseline; errors name `file` and the field ("base.json: facts[3].value: …").
[[nodiscard]] Result<Baseline> parse_baseline(std::string_view text, std::string_view file);
// Reads and parses a baseline file.
[[nodiscard]] Result<Baseline> load_baseline(const std::string& path);
// The baseline as aligned text, one fact a line.
[[nodiscard]] std::string render_text(const Baseline& b);

}  // namespace cardiac::baseline
