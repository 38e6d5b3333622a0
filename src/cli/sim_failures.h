// SPDX-License-Identifier: Apache-2.0
// `cardiac sim --failures-from FILE…` (a failure model fitted from failure-statistics files) and
// `--failures-out FILE` (the simulated failure history as such a file).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "failstats/stats.h"
#include "sim/engine.h"

namespace cardiac::cli {

struct FittedFailures {
  std::vector<std::string> files;
  failstats::FailureStats stats;  // the files merged
  sim::FailureModel model;
};

// Reads every file (cardiac.failure-stats/v1), merges them and fits the model. Errors name the
// file and the field; a file with no exposure is refused, as nothing follows from it.
[[nodiscard]] Result<FittedFailures> fit_failures_from(const std::vector<std::string>& paths);

// The fitted model for people (one line per component with its rate interval) and as JSON.
[[nodiscard]] std::string fitted_text(const FittedFailures& f);
[[nodiscard]] nlohmann::json fitted_json(const FittedFailures& f);

// The failure history that `config` simulates, as a cardiac.failure-stats/v1 document: the
// engine's failure stream for its model, cluster and seed over its horizon. Needs a horizon
// (--days): the exposure is the simulated span.
[[nodiscard]] Result<nlohmann::json> simulated_failures(const sim::SimConfig& config);

}  // namespace cardiac::cli
