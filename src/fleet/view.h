// SPDX-License-Identifier: Apache-2.0
// The fleet as Prometheus sees it: every node the cardiac scrape job lists, its GPUs with their
// verdicts, firing alerts and Xids. Built from Prometheus' answers alone (a pure function of
// them, tested on hand-written answers); a node Prometheus cannot scrape is a node whose state
// is unknown, never one that is fine.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cardiac::fleet {

// As cardiac_gpu_health and cardiac_host_health say it, plus what Prometheus cannot tell.
enum class Verdict { kOk = 0, kWarn = 1, kFail = 2, kUnknown = 3 };
const char* verdict_name(Verdict v);  // "ok", "warn", "fail", "unknown"

struct FleetAlert {
  std::string name;
  std::string severity;  // the rule's severity label
  std::string state;     // "firing" or "pending"
  std::string summary;   // the description annotation, else the summary
  std::string active_at;
  std::optional<int> gpu;
};

struct FleetGpu {
  int index = 0;
  std::string uuid;
  std::string model;
  Verdict verdict = Verdict::kUnknown;
  bool answering = false;             // cardiac_gpu_up
  std::optional<double> utilization;  // ratio
  std::optional<double> memory_used;  // bytes
  std::optional<double> memory_total;
  std::optional<double> temperature;  // celsius
  std::optional<double> power;        // watts
  int last_xid = 0;
  std::map<int, double> xids;  // code → count since the agent started
  std::string reason;          // in words, for a GPU that is not fine
};

struct FleetNode {
  std::string instance;  // Prometheus' target
  std::string hostname;  // the agent's hostname label, else the instance's host
  bool scraped = false;  // the target's last scrape succeeded
  std::string scrape_error;
  std::string last_scrape;  // RFC 3339, as Prometheus gives it
  Verdict verdict = Verdict::kUnknown;
  Verdict host = Verdict::kUnknown;
  Verdict inventory = Verdict::kUnknown;
  std::optional<bool> nvml;  // cardiac_nvml_available
  std::vector<FleetGpu> gpus;
  std::vector<FleetAlert> alerts;  // firing, this node's
  std::string reason;              // in words, for a node that is not fine
};

struct FleetView {
  std::string prometheus;  // the URL read
  std::string job;
  std::vector<FleetNode> nodes;  // by hostname, then instance
  // Firing alerts of the cardiac rules that name no node of the job (fleet-wide rules).
  std::vector<FleetAlert> fleet_alerts;
  // Worst of the nodes; unknown when a node could not be scraped or there is none.
  Verdict verdict = Verdict::kUnknown;
};

// The instant query whose answer build_view reads as `series`, for the job's targets.
std::string series_query(const std::string& job);

// `targets`: /api/v1/targets' activeTargets; `series`: the result of series_query(job);
// `alerts`: /api/v1/alerts' alerts. Answers of the wrong shape are read as far as they go.
FleetView build_view(const std::string& prometheus, const std::string& job,
                     const nlohmann::json& targets, const nlohmann::json& series,
                     const nlohmann::json& alerts);

nlohmann::json to_json(const FleetView& view);

}  // namespace cardiac::fleet
