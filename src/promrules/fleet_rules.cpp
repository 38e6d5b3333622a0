// SPDX-License-Identifier: Apache-2.0
// The fleet group: recording rules per node and alerts across nodes, over the exported names
// and Prometheus' own `up`, keyed by the scrape target (`instance`), never by `hostname`.
#include "promrules/fleet_rules.h"

#include <charconv>
#include <vector>

#include "core/format.h"
#include "promrules/prometheus_rules.h"

namespace cardiac::promrules {
namespace {

struct FleetRule {
  std::string record;  // a recording rule when set, else an alert
  std::string alert;
  std::string expr;
  std::string for_duration;
  std::string severity;
  std::string summary;
  std::string description;
};

std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& odd_one_out_labels() {
  static const std::vector<std::pair<std::string, std::string>> kLabels{
      {"driver", "mixed drivers in one job hang NCCL"},
      {"kernel", "a kernel nobody tested, its NVIDIA module built separately"},
      {"nccl", "ranks on different NCCL versions can hang or abort when a job starts"},
  };
  return kLabels;
}

std::string thermal_power_reasons() {
  // sw_power_cap is left out: a GPU at full load sits at its power cap as a matter of course.
  return "hw_slowdown|hw_thermal_slowdown|sw_thermal_slowdown|hw_power_brake_slowdown";
}

std::string export_fleet_rules(const FleetOptions& o) {
  const std::string job = "job=\"" + o.job + "\"";
  const std::string gpus = "instance:cardiac_gpus_answering:sum";
  const std::string slowed = "instance:cardiac_gpus_slowed:sum";
  const std::string window = "[" + o.xid_storm_window + "]";

  std::vector<FleetRule> rules;
  // A node whose NVML fails has no GPU series at all; it counts 0 GPUs, not none.
  rules.push_back({gpus, "",
                   "sum by (job, instance) (cardiac_gpu_up{" + job +
                       "}) or sum by (job, instance) (0 * cardiac_nvml_available{" + job + "})",
                   "", "", "", ""});
  rules.push_back({slowed, "",
                   "sum by (job, instance) (max by (job, instance, gpu) "
                   "(cardiac_gpu_clock_event_reason{" +
                       job + ", reason=~\"" + thermal_power_reasons() + "\"}))",
                   "", "", "", ""});

  const bool fixed = o.expected_gpus > 0;
  rules.push_back(
      {"", "cardiac_node_gpus_missing",
       fixed ? gpus + " < " + std::to_string(o.expected_gpus)
             : gpus + " < max_over_time(" + gpus + "[" + o.gpu_lookback + "])",
       "5m", "critical", "{{ $labels.instance }} answers with fewer GPUs than expected",
       "{{ $labels.instance }} has {{ $value }} GPUs answering NVML, " +
           (fixed ? "expected " + std::to_string(o.expected_gpus)
                  : "fewer than it had within the last " + o.gpu_lookback) +
           "; a GPU fell off the bus, is lost, or was not found at boot (cardiac status / "
           "cardiac doctor on the node)"});

  const std::string throttling = "count(" + slowed + " > 0)";
  rules.push_back({"", "cardiac_fleet_throttling",
                   throttling + " >= " + std::to_string(o.throttle_nodes) + " and " + throttling +
                       " / count(" + slowed + ") >= " + number(o.throttle_fraction),
                   "5m", "warning", "{{ $value }} nodes have GPUs slowed for heat or power",
                   "{{ $value }} nodes (at least " + std::to_string(o.throttle_nodes) + " and " +
                       number(o.throttle_fraction * 100) +
                       " % of those reporting) have a GPU with a thermal or power-brake clock "
                       "event reason active for 5m: look at the room, the cooling or the "
                       "power feed before the single nodes"});

  // increase() sees repeats of a known (GPU, Xid) series; the first Xid of a GPU starts a new
  // series that increase() cannot see, but it changes cardiac_gpu_last_xid (0 before).
  rules.push_back(
      {"", "cardiac_fleet_xid_storm",
       "count(count by (job, instance) (increase(cardiac_gpu_xid_errors_total{" + job + "}" +
           window + ") > 0 or changes(cardiac_gpu_last_xid{" + job + "}" + window +
           ") > 0)) >= " + std::to_string(o.xid_storm_nodes),
       "", "critical", "Xid errors on {{ $value }} nodes within " + o.xid_storm_window,
       "Xid errors on {{ $value }} nodes within " + o.xid_storm_window +
           ": a fleet-wide cause (driver or firmware rollout, power event, one job across "
           "nodes) is likelier than that many bad GPUs; cardiac events on the nodes shows the "
           "codes"});

  // The odd node out: a configuration value (cardiac_node_config_info's label) held by fewer
  // nodes than the most common value of the same label. A rolling upgrade fires it too, so it
  // waits a while; a tie (half the nodes on each value) is no odd one out.
  for (const auto& [label, risk] : odd_one_out_labels()) {
    const std::string info = fmt::format("cardiac_node_config_info{{{}}}", job);
    const std::string count = fmt::format("count by ({}) ({})", label, info);
    rules.push_back(
        {"", fmt::format("cardiac_node_{}_odd_one_out", label),
         fmt::format("{} * on ({}) group_left () ({} < on () group_left () max ({}))", info, label,
                     count, count),
         o.odd_one_out_for, "warning",
         fmt::format("{{{{ $labels.instance }}}} runs {} {{{{ $labels.{} }}}}, unlike most nodes",
                     label, label),
         fmt::format("{{{{ $labels.instance }}}} runs {} {{{{ $labels.{} }}}}, which only "
                     "{{{{ $value }}}} node(s) run while most nodes run another: {} (cardiac "
                     "doctor --baseline FILE on the node lists every difference)",
                     label, label, risk)});
  }

  rules.push_back({"", "cardiac_agent_down", "up{" + job + "} == 0", "2m", "warning",
                   "cardiac agent {{ $labels.instance }} is not answering scrapes",
                   "Prometheus could not scrape {{ $labels.instance }} for 2m: the agent, the "
                   "node or the network is down, and its GPUs are unwatched"});
  rules.push_back(
      {"", "cardiac_agent_not_sampling",
       "changes(cardiac_agent_last_sample_timestamp_seconds{" + job + "}[5m]) == 0", "2m",
       "warning", "cardiac agent {{ $labels.instance }} answers but takes no samples",
       "{{ $labels.instance }} serves /metrics but its latest sample has not changed for 5m: "
       "its values are stale (see its /healthz and journal)"});
  rules.push_back(
      {"", "cardiac_agent_series_missing",
       "up{" + job + "} == 1 unless on(job, instance) cardiac_agent_samples_total{" + job + "}",
       "5m", "warning", "{{ $labels.instance }} answers without cardiac's metrics",
       "the target {{ $labels.instance }} of job " + o.job +
           " answers scrapes but serves no cardiac_agent_samples_total: another "
           "program on the port, or a proxy in front of a dead agent"});
  rules.push_back({"", "cardiac_agents_absent",
                   "absent_over_time(cardiac_agent_samples_total{" + job + "}[10m])", "",
                   "critical", "no cardiac agent reported for 10m",
                   "no target of job " + o.job +
                       " served cardiac's metrics for 10m: the job's scrape configuration or "
                       "service discovery lost every agent"});

  std::string out =
      "  - name: \"cardiac_fleet\"\n"
      "    rules:\n";
  for (const auto& r : rules) {
    if (!r.record.empty()) {
      out += "      - record: " + yaml_quote(r.record) + "\n";
      out += "        expr: " + yaml_quote(r.expr) + "\n";
      continue;
    }
    out += "      - alert: " + yaml_quote(r.alert) + "\n";
    out += "        expr: " + yaml_quote(r.expr) + "\n";
    if (!r.for_duration.empty()) out += "        for: " + yaml_quote(r.for_duration) + "\n";
    out += "        labels:\n";
    out += "          severity: " + yaml_quote(r.severity) + "\n";
    out += "        annotations:\n";
    out += "          summary: " + yaml_quote(r.summary) + "\n";
    out += "          description: " + yaml_quote(r.description) + "\n";
  }
  return out;
}

}  // namespace cardiac::promrules
