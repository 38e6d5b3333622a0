// SPDX-License-Identifier: Apache-2.0
// The fleet rules under Prometheus' own rule evaluator (`promtool test rules`): each alert
// fires on the input that should raise it and stays quiet on the near misses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "promrules/fleet_rules.h"
#include "promrules/tests/support.h"

namespace cardiac::promrules {
namespace {

namespace fs = std::filesystem;

using promtool_test::Outcome;
using promtool_test::run;

class FleetPromtool : public ::testing::Test {
 protected:
  void SetUp() override {
    // NOLINTNEXTLINE(bugprone-command-processor): the shell's PATH lookup is the question.
    if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
    }
    dir_ = fs::temp_directory_path() / ("cardiac-fleet-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // Writes the rules for `o` and the unit-test file `tests` (its `tests:` list), runs promtool.
  Outcome test_rules(const FleetOptions& o, const std::string& tests) {
    std::ofstream(dir_ / "fleet.yml") << "groups:\n" << export_fleet_rules(o);
    std::ofstream(dir_ / "tests.yml") << "rule_files:\n  - fleet.yml\nevaluation_interval: 1m\n"
                                      << "tests:\n"
                                      << tests;
    return run("cd '" + dir_.string() + "' && promtool test rules tests.yml");
  }
  fs::path dir_;
};

// `cardiac_gpu_up` of `gpus` GPUs of one node, each with `values`; GPU `last` gets
// `last_values` instead (to make it vanish or fail).
std::string gpu_series(const std::string& instance, int gpus, const std::string& values,
                       const std::string& last_values = "") {
  std::string out;
  for (int g = 0; g < gpus; ++g) {
    const bool last = g == gpus - 1 && !last_values.empty();
    out += "      - series: 'cardiac_gpu_up{job=\"cardiac\",instance=\"" + instance + "\",gpu=\"" +
           std::to_string(g) + "\"}'\n        values: '" + (last ? last_values : values) + "'\n";
  }
  out += "      - series: 'cardiac_nvml_available{job=\"cardiac\",instance=\"" + instance +
         "\"}'\n        values: '1x40'\n";
  return out;
}

// Node a loses GPU 7 from the bus listing at 10m (its series goes; Prometheus still sees its
// last value for the 5m lookback); node b keeps 8; node c
// has always had 7; node d's NVML fails at 10m (no GPU series, cardiac_nvml_available 0).
std::string missing_gpu_input() {
  std::string in = "  - interval: 1m\n    input_series:\n";
  in += gpu_series("a:9847", 8, "1x40", "1x9 _x30");
  in += gpu_series("b:9847", 8, "1x40");
  in += gpu_series("c:9847", 7, "1x40");
  for (int g = 0; g < 8; ++g) {
    in += "      - series: 'cardiac_gpu_up{job=\"cardiac\",instance=\"d:9847\",gpu=\"" +
          std::to_string(g) + "\"}'\n        values: '1x9 _x30'\n";
  }
  in +=
      "      - series: 'cardiac_nvml_available{job=\"cardiac\",instance=\"d:9847\"}'\n"
      "        values: '1x9 0x30'\n";
  return in;
}

std::string missing_alert(const std::string& instance, int value, const std::string& expected) {
  return "          - exp_labels: {severity: \"critical\", job: \"cardiac\", instance: \"" +
         instance +
         "\"}\n"
         "            exp_annotations:\n"
         "              summary: \"" +
         instance +
         " answers with fewer GPUs than expected\"\n"
         "              description: \"" +
         instance + " has " + std::to_string(value) + " GPUs answering NVML, " + expected +
         "; a GPU fell off the bus, is lost, or was not found at boot (cardiac status / "
         "cardiac doctor on the node)\"\n";
}

TEST_F(FleetPromtool, NodeMissingGpusAgainstItsOwnPast) {
  const std::string had = "fewer than it had within the last 1d";
  std::string t = missing_gpu_input();
  t += "    alert_rule_test:\n"
       // Pending for its 5m first; node c (always 7) is never compared with more than it had.
       "      - eval_time: 12m\n        alertname: cardiac_node_gpus_missing\n"
       "        exp_alerts: []\n"
       "      - eval_time: 25m\n        alertname: cardiac_node_gpus_missing\n"
       "        exp_alerts:\n" +
       missing_alert("a:9847", 7, had) + missing_alert("d:9847", 0, had);
  const Outcome r = test_rules({}, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(FleetPromtool, NodeMissingGpusAgainstAConfiguredCount) {
  FleetOptions o;
  o.expected_gpus = 8;
  const std::string exp = "expected 8";
  std::string t = missing_gpu_input();
  t += "    alert_rule_test:\n"
       // Node c has had 7 from the start: only a fixed count catches it.
       "      - eval_time: 6m\n        alertname: cardiac_node_gpus_missing\n"
       "        exp_alerts:\n" +
       missing_alert("c:9847", 7, exp) +
       "      - eval_time: 25m\n        alertname: cardiac_node_gpus_missing\n"
       "        exp_alerts:\n" +
       missing_alert("a:9847", 7, exp) + missing_alert("c:9847", 7, exp) +
       missing_alert("d:9847", 0, exp);
  const Outcome r = test_rules(o, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Clock-event reason series of GPU 0 on `nodes` nodes: `hot` of them with `reason` active
// from 2m on, the rest with it inactive.
std::string throttle_input(int nodes, int hot, const std::string& reason) {
  std::string in = "  - interval: 1m\n    input_series:\n";
  for (int n = 0; n < nodes; ++n) {
    const std::string instance = "n" + std::to_string(n) + ":9847";
    for (const std::string r : {"hw_thermal_slowdown", "sw_power_cap", "gpu_idle"}) {
      const bool on = n < hot && r == reason;
      in += "      - series: 'cardiac_gpu_clock_event_reason{job=\"cardiac\",instance=\"";
      in += instance;
      in += "\",gpu=\"0\",reason=\"" + r + "\"}'\n        values: '";
      in += on ? "0 0 1x30'\n" : "0x32'\n";
    }
  }
  return in;
}

constexpr const char* kThrottleAlert =
    "          - exp_labels: {severity: \"warning\"}\n"
    "            exp_annotations:\n"
    "              summary: \"3 nodes have GPUs slowed for heat or power\"\n"
    "              description: \"3 nodes (at least 3 and 10 % of those reporting) have a GPU "
    "with a thermal or power-brake clock event reason active for 5m: look at the room, the "
    "cooling or the power feed before the single nodes\"\n";

TEST_F(FleetPromtool, ManyNodesThrottling) {
  std::string t = throttle_input(4, 3, "hw_thermal_slowdown");
  t += "    alert_rule_test:\n"
       "      - eval_time: 4m\n        alertname: cardiac_fleet_throttling\n"
       "        exp_alerts: []\n"
       "      - eval_time: 8m\n        alertname: cardiac_fleet_throttling\n"
       "        exp_alerts:\n";
  t += kThrottleAlert;
  // Two nodes are below the node minimum; a power cap on every node is routine.
  t += throttle_input(4, 2, "hw_thermal_slowdown") +
       "    alert_rule_test:\n"
       "      - eval_time: 10m\n        alertname: cardiac_fleet_throttling\n"
       "        exp_alerts: []\n";
  t += throttle_input(4, 4, "sw_power_cap") +
       "    alert_rule_test:\n"
       "      - eval_time: 10m\n        alertname: cardiac_fleet_throttling\n"
       "        exp_alerts: []\n";
  const Outcome r = test_rules({}, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(FleetPromtool, ManyNodesThrottlingHonoursTheFraction) {
  // 3 of 40 nodes is 7.5 %: under 10 % of the fleet, no alert.
  FleetOptions o;
  std::string t = throttle_input(40, 3, "hw_thermal_slowdown") +
                  "    alert_rule_test:\n"
                  "      - eval_time: 10m\n        alertname: cardiac_fleet_throttling\n"
                  "        exp_alerts: []\n";
  EXPECT_EQ(test_rules(o, t).exit_code, 0);
  o.throttle_fraction = 0.05;
  t = throttle_input(40, 3, "hw_thermal_slowdown") +
      "    alert_rule_test:\n"
      "      - eval_time: 10m\n        alertname: cardiac_fleet_throttling\n"
      "        exp_alerts:\n"
      "          - exp_labels: {severity: \"warning\"}\n"
      "            exp_annotations:\n"
      "              summary: \"3 nodes have GPUs slowed for heat or power\"\n"
      "              description: \"3 nodes (at least 3 and 5 % of those reporting) have a GPU "
      "with a thermal or power-brake clock event reason active for 5m: look at the room, the "
      "cooling or the power feed before the single nodes\"\n";
  const Outcome r = test_rules(o, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Node a: its first Xid ever at 5m (a new counter series, last Xid 0 -> 79). Node b: a repeat
// of a known Xid at 6m (counter 1 -> 2, last Xid stays 13). Node c: a new code at 7m (new
// counter series, last Xid 13 -> 31). Node d: quiet.
constexpr const char* kXidInput = R"(  - interval: 1m
    input_series:
      - series: 'cardiac_gpu_xid_errors_total{job="cardiac",instance="a:9847",gpu="0",xid="79"}'
        values: '_x5 1x30'
      - series: 'cardiac_gpu_last_xid{job="cardiac",instance="a:9847",gpu="0"}'
        values: '0x5 79x30'
      - series: 'cardiac_gpu_xid_errors_total{job="cardiac",instance="b:9847",gpu="3",xid="13"}'
        values: '1x6 2x30'
      - series: 'cardiac_gpu_last_xid{job="cardiac",instance="b:9847",gpu="3"}'
        values: '13x36'
      - series: 'cardiac_gpu_xid_errors_total{job="cardiac",instance="c:9847",gpu="1",xid="13"}'
        values: '1x36'
      - series: 'cardiac_gpu_xid_errors_total{job="cardiac",instance="c:9847",gpu="1",xid="31"}'
        values: '_x7 1x30'
      - series: 'cardiac_gpu_last_xid{job="cardiac",instance="c:9847",gpu="1"}'
        values: '13x7 31x30'
      - series: 'cardiac_gpu_last_xid{job="cardiac",instance="d:9847",gpu="0"}'
        values: '0x36'
)";

TEST_F(FleetPromtool, XidStormAcrossNodes) {
  std::string t = std::string(kXidInput) +
                  "    alert_rule_test:\n"
                  "      - eval_time: 6m\n        alertname: cardiac_fleet_xid_storm\n"
                  "        exp_alerts: []\n"
                  "      - eval_time: 8m\n        alertname: cardiac_fleet_xid_storm\n"
                  "        exp_alerts:\n"
                  "          - exp_labels: {severity: \"critical\"}\n"
                  "            exp_annotations:\n"
                  "              summary: \"Xid errors on 3 nodes within 10m\"\n"
                  "              description: \"Xid errors on 3 nodes within 10m: a fleet-wide "
                  "cause (driver or firmware rollout, power event, one job across nodes) is "
                  "likelier than that many bad GPUs; cardiac events on the nodes shows the "
                  "codes\"\n"
                  // Ten minutes after the last new Xid the window is quiet again.
                  "      - eval_time: 20m\n        alertname: cardiac_fleet_xid_storm\n"
                  "        exp_alerts: []\n";
  EXPECT_EQ(test_rules({}, t).exit_code, 0) << test_rules({}, t).output;
  FleetOptions o;
  o.xid_storm_nodes = 4;
  t = std::string(kXidInput) +
      "    alert_rule_test:\n"
      "      - eval_time: 8m\n        alertname: cardiac_fleet_xid_storm\n"
      "        exp_alerts: []\n";
  const Outcome r = test_rules(o, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Node a stops answering at 2m; node b's sampling stalls at 5m (it still answers); node x
// answers without cardiac's series; node c is fine throughout.
constexpr const char* kAgentInput = R"(  - interval: 1m
    input_series:
      - series: 'up{job="cardiac",instance="a:9847"}'
        values: '1 1 0x20'
      - series: 'cardiac_agent_samples_total{job="cardiac",instance="a:9847"}'
        values: '0+60x1 _x20'
      - series: 'cardiac_agent_last_sample_timestamp_seconds{job="cardiac",instance="a:9847"}'
        values: '60+60x1 _x20'
      - series: 'up{job="cardiac",instance="b:9847"}'
        values: '1x22'
      - series: 'cardiac_agent_samples_total{job="cardiac",instance="b:9847"}'
        values: '0+60x4 300x17'
      - series: 'cardiac_agent_last_sample_timestamp_seconds{job="cardiac",instance="b:9847"}'
        values: '60+60x4 300x17'
      - series: 'up{job="cardiac",instance="x:9847"}'
        values: '1x22'
      - series: 'up{job="cardiac",instance="c:9847"}'
        values: '1x22'
      - series: 'cardiac_agent_samples_total{job="cardiac",instance="c:9847"}'
        values: '0+60x21'
      - series: 'cardiac_agent_last_sample_timestamp_seconds{job="cardiac",instance="c:9847"}'
        values: '60+60x21'
)";

TEST_F(FleetPromtool, AgentsThatStopReporting) {
  std::string t = std::string(kAgentInput) + R"yaml(    alert_rule_test:
      - eval_time: 3m
        alertname: cardiac_agent_down
        exp_alerts: []
      - eval_time: 5m
        alertname: cardiac_agent_down
        exp_alerts:
          - exp_labels: {severity: "warning", job: "cardiac", instance: "a:9847"}
            exp_annotations:
              summary: "cardiac agent a:9847 is not answering scrapes"
              description: "Prometheus could not scrape a:9847 for 2m: the agent, the node or the network is down, and its GPUs are unwatched"
      - eval_time: 8m
        alertname: cardiac_agent_not_sampling
        exp_alerts: []
      - eval_time: 12m
        alertname: cardiac_agent_not_sampling
        exp_alerts:
          - exp_labels: {severity: "warning", job: "cardiac", instance: "b:9847"}
            exp_annotations:
              summary: "cardiac agent b:9847 answers but takes no samples"
              description: "b:9847 serves /metrics but its latest sample has not changed for 5m: its values are stale (see its /healthz and journal)"
      - eval_time: 3m
        alertname: cardiac_agent_series_missing
        exp_alerts: []
      - eval_time: 6m
        alertname: cardiac_agent_series_missing
        exp_alerts:
          - exp_labels: {severity: "warning", job: "cardiac", instance: "x:9847"}
            exp_annotations:
              summary: "x:9847 answers without cardiac's metrics"
              description: "the target x:9847 of job cardiac answers scrapes but serves no cardiac_agent_samples_total: another program on the port, or a proxy in front of a dead agent"
      - eval_time: 20m
        alertname: cardiac_agents_absent
        exp_alerts: []
  - interval: 1m
    input_series:
      - series: 'up{job="cardiac",instance="a:9847"}'
        values: '0x20'
      - series: 'cardiac_agent_samples_total{job="other",instance="a:9847"}'
        values: '0+60x20'
    alert_rule_test:
      - eval_time: 12m
        alertname: cardiac_agents_absent
        exp_alerts:
          - exp_labels: {severity: "critical", job: "cardiac"}
            exp_annotations:
              summary: "no cardiac agent reported for 10m"
              description: "no target of job cardiac served cardiac's metrics for 10m: the job's scrape configuration or service discovery lost every agent"
)yaml";
  const Outcome r = test_rules({}, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Four nodes: c runs another driver than a, b and d from the start; at 20m d moves to c's
// driver too, a tie (2 and 2) in which nobody is the odd one out. Every node runs one kernel.
constexpr const char* kConfigInput = R"(  - interval: 1m
    input_series:
      - series: 'cardiac_node_config_info{job="cardiac",instance="a:9847",driver="550.54.15",kernel="6.1.0-18-amd64"}'
        values: '1x60'
      - series: 'cardiac_node_config_info{job="cardiac",instance="b:9847",driver="550.54.15",kernel="6.1.0-18-amd64"}'
        values: '1x60'
      - series: 'cardiac_node_config_info{job="cardiac",instance="c:9847",driver="535.161.08",kernel="6.1.0-18-amd64"}'
        values: '1x60'
      - series: 'cardiac_node_config_info{job="cardiac",instance="d:9847",driver="550.54.15",kernel="6.1.0-18-amd64"}'
        values: '1x19 _x41'
      - series: 'cardiac_node_config_info{job="cardiac",instance="d:9847",driver="535.161.08",kernel="6.1.0-18-amd64"}'
        values: '_x20 1x40'
)";

TEST_F(FleetPromtool, TheNodeWhoseDriverFewNodesRun) {
  const std::string alert_c = R"yaml(        exp_alerts:
          - exp_labels: {severity: "warning", job: "cardiac", instance: "c:9847", driver: "535.161.08", kernel: "6.1.0-18-amd64"}
            exp_annotations:
              summary: "c:9847 runs driver 535.161.08, unlike most nodes"
              description: "c:9847 runs driver 535.161.08, which only 1 node(s) run while most nodes run another: mixed drivers in one job hang NCCL (cardiac doctor --baseline FILE on the node lists every difference)"
)yaml";
  const std::string t =
      std::string(kConfigInput) +
      "    alert_rule_test:\n"
      // Pending for its 5m first.
      "      - eval_time: 3m\n        alertname: cardiac_node_driver_odd_one_out\n"
      "        exp_alerts: []\n"
      "      - eval_time: 10m\n        alertname: cardiac_node_driver_odd_one_out\n" +
      alert_c + "      - eval_time: 19m\n        alertname: cardiac_node_driver_odd_one_out\n" +
      alert_c +
      // A tie is no odd one out; nor is a kernel every node runs.
      "      - eval_time: 50m\n        alertname: cardiac_node_driver_odd_one_out\n"
      "        exp_alerts: []\n"
      "      - eval_time: 50m\n        alertname: cardiac_node_kernel_odd_one_out\n"
      "        exp_alerts: []\n";
  FleetOptions o;
  o.odd_one_out_for = "5m";
  const Outcome r = test_rules(o, t);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(FleetPromtool, CheckRulesPasses) {
  FleetOptions o;
  o.job = "gpu-nodes";
  o.expected_gpus = 4;
  std::ofstream(dir_ / "fleet.yml") << "groups:\n" << export_fleet_rules(o);
  const Outcome r = run("promtool check rules '" + (dir_ / "fleet.yml").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SUCCESS: 12 rules found"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cardiac::promrules
