// SPDX-License-Identifier: Apache-2.0
// Prometheus' own tools over the exported rules, when promtool is installed (Debian: prometheus).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>

#include "promrules/prometheus_rules.h"
#include "promrules/tests/support.h"
#include "rules/defaults.h"

namespace cardiac::promrules {
namespace {

namespace fs = std::filesystem;

using promtool_test::Outcome;
using promtool_test::run;

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

// A private directory holding the exported rules, removed at the end of the test.
class PromtoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_promtool()) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
    dir_ = fs::temp_directory_path() / ("cardiac-promrules-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto rules = rules::default_rules();
    ASSERT_TRUE(rules.has_value());
    std::ofstream(dir_ / "rules.yml") << export_prometheus_rules(*rules, nullptr);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(PromtoolTest, CheckRulesPasses) {
  const Outcome r = run("promtool check rules '" + (dir_ / "rules.yml").string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SUCCESS"), std::string::npos) << r.output;
}

// The labels of GPU 0 as the agent exports them, as a series selector and as YAML.
constexpr std::string_view kGpuSelector =
    R"(gpu="0",uuid="GPU-1",pci_bus_id="00000000:3B:00.0",model="NVIDIA H100",hostname="node-1")";
constexpr std::string_view kGpuYaml =
    R"(gpu: "0", uuid: "GPU-1", pci_bus_id: "00000000:3B:00.0", model: "NVIDIA H100", )"
    R"(hostname: "node-1")";

// `promtool test rules` input: the thermal rules must fire only after their `for`,
// host_memory_low must hold between its threshold and its clear level, and a GPU that fell off
// the bus pages at once.
constexpr std::string_view kUnitTests = R"yaml(rule_files:
  - rules.yml
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'cardiac_gpu_temperature_celsius{@GPU@}'
        values: '80x20'
      - series: 'cardiac_gpu_slowdown_temperature_celsius{@GPU@}'
        values: '83x20'
      - series: 'cardiac_gpu_clock_event_reason{@GPU@,reason="hw_thermal_slowdown"}'
        values: '1x20'
      # Memory below 5 % for 2 min, then 7 % (between threshold and clear), then 12 %.
      - series: 'cardiac_host_memory_total_bytes{hostname="node-1"}'
        values: '100x40'
      - series: 'cardiac_host_memory_available_bytes{hostname="node-1"}'
        values: '4x8 7x8 12x20'
      # The agent exports 0 for every GPU and class; five kernel-log lines arrive at 45 s.
      - series: 'cardiac_gpu_kernel_faults_total{@GPU@,class="fallen_off_bus"}'
        values: '0 0 0 5x20'
    alert_rule_test:
      # A GPU fault pages at once, and the alert carries the count of kernel-log events.
      - eval_time: 30s
        alertname: gpu_fallen_off_bus
        exp_alerts: []
      - eval_time: 1m
        alertname: gpu_fallen_off_bus
        exp_alerts:
          - exp_labels: {severity: "critical", class: "fallen_off_bus", @GPU_LABELS@}
            exp_annotations:
              summary: "gpu_fallen_off_bus on node-1 GPU 0"
              description: "GPU 0 (00000000:3B:00.0) has fallen off the bus (Xid 79), 5 kernel-log events; reboot the machine, then check power, seating and riser"
              cardiac_note: "the value is the window's increase; cardiac's alert counts every occurrence since it started firing"
      # 78 °C is within 5 °C of the 83 °C slowdown threshold: pending first, firing after 1m.
      - eval_time: 30s
        alertname: gpu_temperature_near_slowdown
        exp_alerts: []
      - eval_time: 2m
        alertname: gpu_temperature_near_slowdown
        exp_alerts:
          - exp_labels: {severity: "warning", @GPU_LABELS@}
            exp_annotations:
              summary: "gpu_temperature_near_slowdown on node-1 GPU 0"
              description: "GPU 0 at 80 °C, within 5 °C of its slowdown threshold (alert at gpu_temperature_slowdown - 5 °C)"
      - eval_time: 30s
        alertname: gpu_hw_thermal_slowdown
        exp_alerts: []
      - eval_time: 2m
        alertname: gpu_hw_thermal_slowdown
        exp_alerts:
          - exp_labels: {severity: "warning", reason: "hw_thermal_slowdown", @GPU_LABELS@}
            exp_annotations:
              summary: "gpu_hw_thermal_slowdown on node-1 GPU 0"
              description: "GPU 0: HW thermal slowdown active for over a minute (check airflow and fans)"
#Hysteresis : at 7 % the alert is not raised anew but a firing one holds until 10 %.
      - eval_time: 3m
        alertname: host_memory_low
        exp_alerts:
          - exp_labels: {severity: "critical", hostname: "node-1"}
            exp_annotations:
              summary: "host_memory_low on node-1"
              description: "host memory: only 7 % available"
              cardiac_note: "once firing, holds while the value stays < 10 (hysteresis via the ALERTS series)"
      - eval_time: 6m
        alertname: host_memory_low
        exp_alerts: []
)yaml";

std::string unit_tests() {
  std::string out(kUnitTests);
  for (auto [token, value] : {std::pair{std::string_view("@GPU@"), kGpuSelector},
                              std::pair{std::string_view("@GPU_LABELS@"), kGpuYaml}}) {
    for (auto at = out.find(token); at != std::string::npos; at = out.find(token, at)) {
      out.replace(at, token.size(), value);
      at += value.size();
    }
  }
  return out;
}

TEST_F(PromtoolTest, ThermalHysteresisAndFaultUnitTests) {
  std::ofstream(dir_ / "tests.yml") << unit_tests();
  const Outcome r = run("cd '" + dir_.string() + "' && promtool test rules tests.yml");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace cardiac::promrules
