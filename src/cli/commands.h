// SPDX-License-Identifier: Apache-2.0
// The subcommand table: each command registers its flags and returns the function to run.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "cli/context.h"

namespace cardiac::cli {

// Set by a register_* function; called when its subcommand was chosen.
using Runner = std::function<int(Context&)>;

struct CommandSpec {
  const char* name;
  const char* help;
  Runner (*register_fn)(CLI::App& sub);
  // The exit code of a flag the command does not accept. `check` speaks the monitoring-plugin
  // convention, where 2 is CRITICAL: its usage errors are UNKNOWN (3).
  int usage_exit = kExitUsage;
};

Runner register_agent(CLI::App& sub);
Runner register_alerts(CLI::App& sub);
Runner register_backup(CLI::App& sub);
Runner register_baseline(CLI::App& sub);
Runner register_cancel(CLI::App& sub);
Runner register_check(CLI::App& sub);
Runner register_doctor(CLI::App& sub);
Runner register_events(CLI::App& sub);
Runner register_export(CLI::App& sub);
Runner register_fence(CLI::App& sub);
Runner register_fleet(CLI::App& sub);
Runner register_history(CLI::App& sub);
Runner register_hold(CLI::App& sub);
Runner register_incident(CLI::App& sub);
Runner register_incidents(CLI::App& sub);
Runner register_jobs(CLI::App& sub);
Runner register_logs(CLI::App& sub);
Runner register_net(CLI::App& sub);
Runner register_npd(CLI::App& sub);
Runner register_plan(CLI::App& sub);
Runner register_queue(CLI::App& sub);
Runner register_release(CLI::App& sub);
Runner register_restore(CLI::App& sub);
Runner register_scenario(CLI::App& sub);
Runner register_share(CLI::App& sub);
Runner register_sim(CLI::App& sub);
Runner register_slurm(CLI::App& sub);
Runner register_stats(CLI::App& sub);
Runner register_status(CLI::App& sub);
Runner register_submit(CLI::App& sub);
Runner register_top(CLI::App& sub);
Runner register_why(CLI::App& sub);

}  // namespace cardiac::cli
