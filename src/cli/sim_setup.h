// SPDX-License-Identifier: Apache-2.0
// `cardiac sim`'s flags and configuration file, turned into the runs to simulate.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/sim_failures.h"
#include "core/result.h"
#include "sim/engine.h"
#include "sim/trace.h"

namespace cardiac::cli {

// The scheduling policies' parameters (sched::PolicyConfig, and the simulator's backfill
// interval and priority calculation period); unset ones keep their defaults.
struct PolicyTuning {
  std::optional<DurationNs> half_life, max_age, backfill_interval, priority_calc_period;
  std::optional<bool> fair_tree, favor_small, spread;
  std::optional<double> dampening, w_age, w_fairshare, w_job_size, w_qos;
};

struct SimFlags {
  std::string config;
  std::string trace;
  std::string format = "auto";
  std::string synth;           // preset name
  std::optional<double> jobs;  // a double, so that 1e11 reads and is refused by its size
  std::optional<double> load;
  std::string nodes_file;  // openb node list: the cluster from the trace's own machines
  std::string cluster;
  std::string policy;
  // Repeatable: every combination of policy, failures, checkpoint and seed is one run.
  std::vector<std::string> failures;
  std::vector<std::string> failures_from;  // statistics files to fit the failure model from
  std::string failures_out;                // write the simulated failure history here
  std::vector<std::string> checkpoint;
  std::vector<std::uint64_t> seeds;
  // Fail-slow GPUs, over every failure model: the rate ("typical" or stragglers per GPU-day),
  // the factor, the detection times (repeatable: a sweep) and the repair time, as given.
  std::string fail_slow;
  std::optional<double> fail_slow_factor;
  std::vector<std::string> fail_slow_detection;
  std::string fail_slow_repair;
  unsigned nodes_per_domain = 0;
  PolicyTuning tuning;
  std::string backfill_interval;     // the flag's text
  std::string priority_calc_period;  // the flag's text
  double days = 0;
  unsigned threads = 0;
  bool json = false;
  bool quiet = false;
  std::string jobs_out, csv, html;
};

void add_sim_flags(CLI::App& sub, SimFlags& f);

struct SimRun {
  std::string label;
  sim::SimConfig config;
};

struct SimSetup {
  sim::Trace trace;
  std::vector<SimRun> runs;
  nlohmann::json description;            // what was simulated, for the reports
  std::optional<FittedFailures> fitted;  // --failures-from
};

// Reads `path` into the flags it leaves unset (flags win).
Status apply_sim_file(const std::string& path, SimFlags& f);

// Flags win over the configuration file; errors name the file, line and key or the flag.
Result<SimSetup> build_sim_setup(const SimFlags& flags);

}  // namespace cardiac::cli
