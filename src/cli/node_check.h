// SPDX-License-Identifier: Apache-2.0
// One answer to "is this node's GPU side healthy right now?" for the programs other systems run
// on a schedule (`cardiac check` for Nagios-style monitors, `cardiac npd` for Kubernetes'
// node-problem-detector): from the running agent when it answers and is sampling (its verdicts
// plus its firing alerts, which carry what only the kernel log told it), else from one quick
// sample of this machine within a deadline, saying which it was.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"
#include "health/verdict.h"

namespace cardiac::cli {

struct NodeProblem {
  health::Level level = health::Level::kWarn;  // never kOk
  std::string code;                            // "gpu_lost", an alert's rule name, …
  std::string text;                            // "GPU 5 (0000:9a:00.0): lost from the bus …"
  std::optional<unsigned> gpu;
  bool xid = false;  // an Xid (or SXid) fault: node-problem-detector's GPUXid condition
};

struct NodeCheck {
  std::string source;  // "agent 127.0.0.1:9847" or "local sample"
  // nullopt: the GPUs could not be looked at (no driver, no sample yet); `unknown` says why.
  std::optional<health::Level> level;
  std::string unknown;
  std::vector<NodeProblem> problems;  // worst first, then in the order found
  std::vector<std::string> notes;     // what else a person should know ("agent not running …")
  unsigned gpus = 0;
  unsigned gpus_ok = 0;
};

struct NodeCheckOptions {
  config::Config config;
  std::string state_dir;               // for the agent's API token (non-loopback listens)
  DurationNs timeout = 5 * kNsPerSec;  // for the agent's answers, then for the local sample
  bool use_agent = true;
  std::string nvml_lib;  // local sample; empty: the configuration's
};

// The agent's `/api/v1/status` (or `cardiac status --json`) document and its `/api/v1/alerts`
// array, judged: FAIL and WARN reasons of the inventory, each GPU and the host, and every open,
// firing, unsilenced alert. Pure, for tests.
NodeCheck judge_status_json(const nlohmann::json& status, const nlohmann::json& alerts);

// Asks the agent (config.agent.listen), falling back to a local sample; never fails: what could
// not be done is in the answer (`level` nullopt, or a note).
NodeCheck check_node(const NodeCheckOptions& o, const Clock& clock);

// "GPU 5 (0000:9a:00.0): lost from the bus (GPU_IS_LOST); 2 more problems" — at most `max`
// bytes (0: no limit), cut on a UTF-8 boundary with "…" when longer.
std::string summary_line(const NodeCheck& c, std::size_t max = 0);
// node-problem-detector's custom-plugin-monitor configuration running `cardiac npd` at `path`
// every `interval`: conditions GPUUnhealthy and GPUXid (docs/integrations.md).
nlohmann::json npd_config(const std::string& path, const std::string& interval,
                          const std::string& timeout, std::size_t max_output);

// `s` cut to at most `max` bytes as above (0: no limit).
std::string fit_message(std::string s, std::size_t max);

}  // namespace cardiac::cli
