// SPDX-License-Identifier: Apache-2.0
// What a simulation run prints or writes: the comparison table, JSON, the per-job and
// time-series CSV files and the self-contained HTML report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/engine.h"

namespace cardiac::sim {

// A run as the reports name it: the policy and what else differs between runs of one sweep.
struct NamedResult {
  std::string label{};
  SimResult result{};
};

nlohmann::json to_json(const Summary& s);
nlohmann::json to_json(const std::vector<NamedResult>& runs, const nlohmann::json& setup);

// One column per run, one row per figure.
std::string render_table(const std::vector<NamedResult>& runs);

// job_id,submit_time,start_time,end_time,gpus,restarts (seconds; empty when it never started
// or did not end), plus policy when there are several runs. job_id is the trace's id as written
// (an openb pod name, "j17" for synthetic jobs), quoted when it needs to be.
std::string jobs_csv(const std::vector<NamedResult>& runs);
// policy,time,allocated_gpus,productive_gpus,down_gpus,pending,running,interruptions
std::string series_csv(const std::vector<NamedResult>& runs);

// One HTML file, no external assets: the setup, the comparison table and SVG charts of
// utilization, queue length and interruptions over time.
std::string render_html(const std::vector<NamedResult>& runs, const nlohmann::json& setup);

}  // namespace cardiac::sim
