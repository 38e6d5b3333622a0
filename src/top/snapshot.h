// SPDX-License-Identifier: Apache-2.0
// What `cardiac top` shows, read from the documents both of its sources produce: the status
// report (`cardiac.status/v1`, from a local sample or the agent's /api/v1/status), the agent's
// alerts and its queue. Pure: JSON in, plain values out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"

namespace cardiac::top {

struct Reason {
  std::string level;  // "OK", "WARN", "FAIL"
  std::string code;
  std::string text;
};

struct ProcessInfo {
  unsigned gpu = 0;
  std::uint64_t pid = 0;
  std::string type;  // "compute", "graphics"
  std::string name;  // empty when /proc could not tell
  std::string user;  // filled by the source (from /proc or the job); empty when unknown
  std::string job;   // "cardiac 7", "slurm 123"; empty when none
  std::optional<std::uint64_t> memory;  // bytes
};

struct GpuInfo {
  unsigned index = 0;
  std::string name;  // without a leading "NVIDIA "
  std::string bus_id;
  std::string health = "ok";  // "ok", "lost", "unresponsive", "reset_required", …
  std::string health_detail;
  std::string verdict;  // "OK", "WARN", "FAIL"
  std::vector<Reason> reasons;
  std::optional<double> util;           // %
  std::optional<double> mem_used;       // bytes
  std::optional<double> mem_total;      // bytes
  std::optional<double> temp;           // °C
  std::optional<double> temp_slowdown;  // °C
  std::optional<double> power;          // W
  std::optional<double> power_limit;    // W
  // Short names of the clock event reasons set ("hw_thermal", "sw_power"), nullopt when the GPU
  // does not report them; `idle` when only gpu_idle is set.
  std::optional<std::vector<std::string>> throttle;
  bool idle = false;
  std::vector<ProcessInfo> processes;
  TimeNs sampled_at = 0;
};

struct AlertInfo {
  std::int64_t id = 0;
  std::string rule;
  std::string severity;  // "critical", "warning", "info"
  std::string state;     // "pending", "firing"
  std::string description;
  std::optional<unsigned> gpu;
  TimeNs since = 0;  // fired (or started, while pending), ns
  bool silenced = false;
  bool acked = false;
};

struct JobInfo {
  std::int64_t id = 0;
  std::string user;
  std::string name;
  std::string state;  // "pending", "held", "running", …
  unsigned gpus = 0;
  int priority = 0;
  std::vector<unsigned> gpu_indices;
  std::string reason;  // why it waits
  TimeNs since = 0;    // started when running, else submitted
};

struct Snapshot {
  std::string source;  // "agent 127.0.0.1:9847" or "local sample"
  std::string host;
  std::string verdict;  // overall; empty when unknown
  std::string message;  // why there is no verdict, or NVML's error
  TimeNs taken_at = 0;
  std::vector<Reason> inventory;
  std::vector<Reason> host_reasons;
  std::vector<GpuInfo> gpus;
  // Alerts and the queue come only from a running agent.
  std::optional<std::vector<AlertInfo>> alerts;
  std::optional<std::vector<JobInfo>> jobs;
  std::string queue_blocked;       // "nothing can start: …"
  std::vector<std::string> notes;  // shown on the header's second line
};

// The status document (`cardiac.status/v1`); anything missing is left empty, never guessed.
Snapshot from_status_json(const nlohmann::json& status);
// The agent's /api/v1/alerts array: pending and firing alerts, resolved ones left out.
std::vector<AlertInfo> alerts_from_json(const nlohmann::json& alerts);
// The agent's /api/v1/queue object: its jobs (pending, held, running).
std::vector<JobInfo> jobs_from_json(const nlohmann::json& queue);

// The queue's "blocked" (why nothing can start), empty when absent.
std::string blocked_from_json(const nlohmann::json& queue);

// The short throttle name of a `clock_event_reason_names` entry ("hw_thermal_slowdown" →
// "hw_thermal"); unknown bits are "other".
std::string throttle_brief(std::string_view name);

// The user id in the text of /proc/<pid>/status (its "Uid:" line, the real id).
std::optional<unsigned> uid_from_proc_status(std::string_view text);

}  // namespace cardiac::top
