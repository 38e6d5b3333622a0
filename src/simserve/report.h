// SPDX-License-Identifier: Apache-2.0
// `cardiac sim serve`'s outputs: a text table (one column per policy), JSON, and a
// self-contained HTML page comparing the policies with inline SVG charts (core/svg.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simserve/engine.h"

namespace cardiac::simserve {

// `setup` describes what was simulated (model, GPUs, workload); it is copied into the JSON and
// listed at the top of the HTML page. `headline` is the text's first line.
std::string render_text(const std::vector<ServeResult>& runs, const std::string& headline);
nlohmann::json to_json(const std::vector<ServeResult>& runs, const nlohmann::json& setup);
std::string render_html(const std::vector<ServeResult>& runs, const nlohmann::json& setup,
                        const std::string& headline);

}  // namespace cardiac::simserve
