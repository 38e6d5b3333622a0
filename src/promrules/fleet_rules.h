// SPDX-License-Identifier: Apache-2.0
// Fleet-wide Prometheus rules: what one agent cannot see about itself (a node that lost GPUs,
// many nodes throttling or hitting Xids at once, an agent that stopped reporting).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cardiac::promrules {

struct FleetOptions {
  std::string job = "cardiac";  // the Prometheus job that scrapes the agents
  // GPUs every node should answer with; 0: each node is held to the most it answered with
  // over `gpu_lookback`, so no per-site number is needed.
  int expected_gpus = 0;
  std::string gpu_lookback = "1d";
  // "Many nodes throttling": at least this many nodes, and at least this fraction of the
  // nodes that report clock events, with a GPU slowed for heat or power.
  int throttle_nodes = 3;
  double throttle_fraction = 0.1;
  // "Xid storm": Xids on at least this many nodes within the window.
  int xid_storm_nodes = 3;
  std::string xid_storm_window = "10m";
  // "Odd node out": how long a node may run a driver, kernel or NCCL version that most nodes
  // do not (a rolling upgrade passes through this state).
  std::string odd_one_out_for = "30m";
};

// One group "cardiac_fleet" (recording rules and alerts) as YAML list items, to follow the
// "groups:" of export_prometheus_rules' output.
std::string export_fleet_rules(const FleetOptions& o);

// The labels of cardiac_node_config_info that a node must share with most of the fleet, each
// with the risk when it does not: one `cardiac_node_<label>_odd_one_out` alert per label.
const std::vector<std::pair<std::string, std::string>>& odd_one_out_labels();
// The clock-event reasons that count as "slowed for heat or power", as a PromQL regex.
std::string thermal_power_reasons();

}  // namespace cardiac::promrules
