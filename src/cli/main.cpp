// SPDX-License-Identifier: Apache-2.0
// cardiac's entry point: the subcommand table, and the hidden NVML worker and job runner
// fast paths.
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "queue/runner.h"
#include "telemetry/gpu_worker.h"

namespace {

// Alphabetical; one line of help each.
constexpr cardiac::cli::CommandSpec kCommands[] = {
    {"agent", "Run the daemon: sampling, history, alert rules, notifications, HTTP API",
     cardiac::cli::register_agent},
    {"alerts", "List alerts; acknowledge or silence them", cardiac::cli::register_alerts},
    {"backup", "Copy the agent's store into one file while the agent runs",
     cardiac::cli::register_backup},
    {"baseline",
     "Record this node's configuration for drift checks: cardiac baseline capture -o FILE",
     cardiac::cli::register_baseline},
    {"cancel", "Cancel queued or running jobs", cardiac::cli::register_cancel},
    {"check", "Monitoring-plugin check: OK/WARNING/CRITICAL/UNKNOWN with the worst GPU problem",
     cardiac::cli::register_check, cardiac::cli::kExitCannotRun},
    {"doctor",
     "Find the cause of a slow, hung or failing GPU server: findings, evidence, next steps",
     cardiac::cli::register_doctor},
    {"events", "Kernel-log and Xid events from the agent's store", cardiac::cli::register_events},
    {"export",
     "Integration files: Prometheus alerting rules, Grafana dashboard, node-problem-detector "
     "config",
     cardiac::cli::register_export},
    {"fence", "GPUs kept free of new jobs: list, add, clear", cardiac::cli::register_fence},
    {"fleet", "Every node's GPUs, verdicts, alerts and Xids, read through Prometheus",
     cardiac::cli::register_fleet},
    {"history", "A metric's history from the agent's store", cardiac::cli::register_history},
    {"hold", "Keep a pending job from starting", cardiac::cli::register_hold},
    {"incident",
     "A GPU's fault history (fault, detection, fence, remediation, return); record a remediation",
     cardiac::cli::register_incident},
    {"incidents", "GPU faults (lost, hung, reset required) with start, end and evidence",
     cardiac::cli::register_incidents},
    {"jobs", "Jobs that ended: state, exit code, run time", cardiac::cli::register_jobs},
    {"logs", "A job's output (-f follows it)", cardiac::cli::register_logs},
    {"net", "Who is using the network: top talkers by process (net top)",
     cardiac::cli::register_net},
    {"npd", "node-problem-detector custom plugin: exit 0 OK, 1 problem, 2 unknown",
     cardiac::cli::register_npd},
    {"plan", "Will a model fit for serving or training: memory, KV cache, changes that fit",
     cardiac::cli::register_plan},
    {"queue", "Pending and running jobs, with why each waits", cardiac::cli::register_queue},
    {"release", "Let a held job start again", cardiac::cli::register_release},
    {"restore", "Put a backup back as the agent's store (the agent stopped)",
     cardiac::cli::register_restore},
    {"scenario", "Record this machine's NVML answers into a fake-NVML scenario file",
     cardiac::cli::register_scenario},
    {"share", "Fair-share usage and factors per user", cardiac::cli::register_share},
    {"sim", "Simulate a GPU cluster: policies, failures, checkpoints; checkpoint advice",
     cardiac::cli::register_sim},
    {"slurm",
     "Slurm hooks: healthcheck (drain and resume this node), prolog and epilog (the job's GPUs)",
     cardiac::cli::register_slurm},
    {"stats", "Failure statistics from the agent's store: rates, MTBI, MTTR, with intervals",
     cardiac::cli::register_stats},
    {"status", "One screen: every GPU and the host, each with a verdict",
     cardiac::cli::register_status},
    {"submit", "Queue a command for GPUs: cardiac submit --gpus 2 -- python train.py",
     cardiac::cli::register_submit},
    {"top", "Full-screen live view: GPUs with bars and sparklines, processes, alerts, queue",
     cardiac::cli::register_top},
    {"why", "Why a job waits, runs where it runs, or ended", cardiac::cli::register_why},
};

}  // namespace

int main(int argc, char** argv) {
  cardiac::restore_environment_after_reexec();
  if (argc >= 2 && std::strcmp(argv[1], cardiac::telemetry::kWorkerSubcommand) == 0) {
    return cardiac::telemetry::worker_main(argc, argv);
  }
  if (argc >= 2 && std::strcmp(argv[1], cardiac::queue::kRunnerSubcommand) == 0) {
    return cardiac::queue::run_job_runner(argc, argv);
  }
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"cardiac keeps GPU servers healthy and busy", "cardiac"};
  app.set_version_flag("--version", std::string("cardiac ") + CARDIAC_VERSION);
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "Diagnostics on stderr")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  cardiac::cli::Runner chosen;
  std::vector<std::pair<CLI::App*, cardiac::cli::Runner>> runners;
  for (const auto& spec : kCommands) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.help);
    runners.emplace_back(sub, spec.register_fn(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc == 0) return 0;
    for (std::size_t i = 0; i < runners.size(); ++i) {
      if (runners[i].first->parsed()) return kCommands[i].usage_exit;
    }
    return cardiac::cli::kExitUsage;
  }
  cardiac::log::set_level(log_level);
  cardiac::cli::Context ctx{std::cout, std::cerr, cardiac::SystemClock::instance(),
                            isatty(STDOUT_FILENO) == 1};
  for (auto& [sub, runner] : runners) {
    if (sub->parsed()) {
      try {
        return runner(ctx);
      } catch (const std::exception& e) {
        std::cerr << "cardiac " << sub->get_name() << ": " << e.what() << "\n";
        return cardiac::cli::kExitCannotRun;
      }
    }
  }
  return cardiac::cli::kExitUsage;
}
