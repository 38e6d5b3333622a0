// SPDX-License-Identifier: Apache-2.0
// What cardiac reads back from Slurm: nodes (`scontrol show node -o`) and one job
// (`scontrol show job -o`). Slurm itself is the shared state of the blast-radius limit, so
// every node's health check counts the same drains. Pure parsers, for tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::slurm {

struct NodeInfo {
  std::string name;
  std::string state;   // "IDLE+DRAIN", "MIXED", "DOWN+NOT_RESPONDING", …
  bool drain = false;  // DRAIN flag set (draining or drained)
  std::string reason;  // without scontrol's " [user@time]"; empty when none
  std::string reason_user;
  TimeNs reason_time = 0;  // when the reason was set; 0 when unknown
};

struct JobInfo {
  std::string id;
  std::string state;  // "RUNNING", "COMPLETING", …
  TimeNs start = 0;   // 0 when unknown
  TimeNs end = 0;     // 0 when unknown (a running job's is its time limit's end)
  std::string nodes;  // NodeList
};

// A time as scontrol prints it: unix seconds (SLURM_TIME_FORMAT=%s, which cardiac sets) or
// its default "2026-12-05T00:19:18" in local time. nullopt for "Unknown", "None", "(null)".
std::optional<TimeNs> parse_slurm_time(std::string_view text);

// One node per non-empty line of `scontrol show node -o`. A line without NodeName= is an error
// naming its number.
[[nodiscard]] Result<std::vector<NodeInfo>> parse_show_node(std::string_view text);

// The first line of `scontrol show job -o ID`.
[[nodiscard]] Result<JobInfo> parse_show_job(std::string_view text);

// GPU indices of SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES ("0,1,5"); a UUID or MIG entry is an
// error naming it (cardiac maps indices only).
[[nodiscard]] Result<std::vector<unsigned>> parse_gpu_list(std::string_view list);

}  // namespace cardiac::slurm
