// SPDX-License-Identifier: Apache-2.0
// Tests for the Prometheus rules export: names, unit conversions, skips and YAML quoting.
#include "promrules/prometheus_rules.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "metrics/registry.h"
#include "rules/defaults.h"
#include "rules/parse.h"

namespace cardiac::promrules {
namespace {

std::vector<rules::Rule> defaults() {
  auto r = rules::default_rules();
  EXPECT_TRUE(r.has_value());
  return r.has_value() ? *r : std::vector<rules::Rule>{};
}

// The lines of one alert: from "- alert: NAME" up to the next alert.
std::string alert_block(const std::string& yaml, const std::string& name) {
  const std::string head = "- alert: \"" + name + "\"\n";
  const auto at = yaml.find(head);
  if (at == std::string::npos) return {};
  const auto next = yaml.find("- alert: ", at + head.size());
  return yaml.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

TEST(PromRules, DefaultsExportWithKnownSkips) {
  std::vector<std::string> skipped;
  const std::string yaml = export_prometheus_rules(defaults(), &skipped);
  EXPECT_NE(yaml.find("groups:\n  - name: \"cardiac\"\n    rules:\n"), std::string::npos);
  // gpu_process_count and host_inlet_temperature_c are not exported on /metrics, nor the
  // serving view's points (per-process projections and engine verdicts are the agent's own),
  // nor the security watch's (its findings are the agent's own scans of /proc).
  std::set<std::string> names;
  for (const auto& s : skipped) names.insert(s.substr(0, s.find(':')));
  EXPECT_EQ(
      names,
      (std::set<std::string>{
          "gpu_allocated_but_idle", "host_inlet_temperature_high", "host_inlet_temperature_low",
          "gpu_process_vram_oom_soon", "gpu_process_vram_oom_imminent", "serving_engine_unreadable",
          "serving_kv_cache_full", "serving_queue_while_gpu_idle", "security_gpu_cryptojacking",
          "security_uid0_account", "security_uplink_flood", "security_uplink_flood_saturating",
          "security_unknown_gpu_process", "security_deleted_executable", "security_tmp_executable",
          "security_new_listening_port"}));
  std::size_t alerts = 0;
  for (auto at = yaml.find("- alert: "); at != std::string::npos;
       at = yaml.find("- alert: ", at + 1)) {
    ++alerts;
  }
  EXPECT_EQ(alerts + skipped.size(), defaults().size());
}

TEST(PromRules, EveryMetricNameIsExported) {
  std::set<std::string> known;
  for (const auto& m : metrics::metric_registry()) known.insert(std::string(m.name));
  const std::string yaml = export_prometheus_rules(defaults(), nullptr);
  const std::regex token("cardiac_[a-z_]+");
  std::size_t seen = 0;
  for (auto it = std::sregex_iterator(yaml.begin(), yaml.end(), token);
       it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    if (name == "cardiac_note") continue;  // the annotation key, not a metric
    ++seen;
    EXPECT_TRUE(known.count(name)) << name << " is not in metrics::metric_registry()";
  }
  EXPECT_GT(seen, 30u);
}

TEST(PromRules, XidAndFaultCounterRulesAreTranslated) {
  auto parsed = rules::parse_rules(R"toml(
[[rule]]
name = "xid_seen"
metric = "increase(gpu_xid_errors_total[10m])"
op = ">"
threshold = 0
severity = "critical"
description = "GPU {gpu}: Xid {xid}, {value} times"

[[rule]]
name = "xid_rate"
metric = "rate(gpu_xid_errors_total[5m])"
op = ">"
threshold = 1
)toml",
                                   "rules.toml");
  ASSERT_TRUE(parsed) << parsed.error().what();
  std::vector<std::string> skipped;
  const std::string yaml = export_prometheus_rules(*parsed, &skipped);
  EXPECT_TRUE(skipped.empty()) << skipped.front();
  const std::string xid = alert_block(yaml, "xid_seen");
  EXPECT_NE(xid.find(R"(expr: "increase(cardiac_gpu_xid_errors_total[10m]) > 0")"),
            std::string::npos)
      << xid;
  EXPECT_NE(xid.find("Xid {{ $labels.xid }}, {{ $value | humanize }} times"), std::string::npos)
      << xid;
  EXPECT_NE(alert_block(yaml, "xid_rate")
                .find(R"(expr: "increase(cardiac_gpu_xid_errors_total[5m]) * 1 / 300 > 1")"),
            std::string::npos)
      << yaml;
  // The defaults' fault-class rules read the exported fault counter by class.
  const std::string all = export_prometheus_rules(defaults(), nullptr);
  EXPECT_NE(
      alert_block(all, "gpu_fallen_off_bus")
          .find(R"(increase(cardiac_gpu_kernel_faults_total{class=\"fallen_off_bus\"}[1h]) > 0)"),
      std::string::npos)
      << alert_block(all, "gpu_fallen_off_bus");
}

TEST(PromRules, ConvertsUnits) {
  const std::string yaml = export_prometheus_rules(defaults(), nullptr);
  EXPECT_NE(alert_block(yaml, "gpu_memory_nearly_full")
                .find("100 * cardiac_gpu_memory_used_bytes / (cardiac_gpu_memory_total_bytes > "
                      "0) >= 95"),
            std::string::npos);
  EXPECT_NE(alert_block(yaml, "gpu_temperature_near_slowdown")
                .find("cardiac_gpu_temperature_celsius >= on(gpu, uuid, pci_bus_id, model, "
                      "hostname) cardiac_gpu_slowdown_temperature_celsius - 5"),
            std::string::npos);
  EXPECT_NE(alert_block(yaml, "host_cpu_saturated").find("100 * cardiac_host_cpu_busy_ratio > 95"),
            std::string::npos);
  // Rate per 1m over 5m of rx + tx drops.
  EXPECT_NE(alert_block(yaml, "host_nic_drops_rising")
                .find("(increase(cardiac_host_network_receive_drops_total[5m]) + "
                      "increase(cardiac_host_network_transmit_drops_total[5m])) * 60 / 300 > 60"),
            std::string::npos);
  EXPECT_NE(alert_block(yaml, "gpu_ecc_corrected_rising")
                .find("\"increase(cardiac_gpu_ecc_volatile_corrected_errors_total[1h]) > 100\""),
            std::string::npos);
  EXPECT_NE(alert_block(yaml, "gpu_hw_thermal_slowdown")
                .find("cardiac_gpu_clock_event_reason{reason=\\\"hw_thermal_slowdown\\\"} == 1"),
            std::string::npos);
}

TEST(PromRules, GuardForAndTemplates) {
  const std::string yaml = export_prometheus_rules(defaults(), nullptr);
  const std::string pcie = alert_block(yaml, "gpu_pcie_width_degraded");
  EXPECT_NE(pcie.find("and on(gpu, uuid, pci_bus_id, model, hostname) (100 * "
                      "cardiac_gpu_utilization_ratio >= 20)"),
            std::string::npos);
  EXPECT_NE(pcie.find("for: \"5m\""), std::string::npos);
  EXPECT_NE(pcie.find("GPU {{ $labels.gpu }}: PCIe link x{{ $value | humanize }}"),
            std::string::npos);
  EXPECT_NE(alert_block(yaml, "host_disk_nearly_full").find("{{ $labels.mountpoint }} is"),
            std::string::npos);
  EXPECT_NE(alert_block(yaml, "gpu_lost").find("severity: \"critical\""), std::string::npos);
  EXPECT_EQ(alert_block(yaml, "gpu_lost").find("for:"), std::string::npos);
}

TEST(PromRules, HysteresisUsesAlertsSeries) {
  const std::string b =
      alert_block(export_prometheus_rules(defaults(), nullptr), "host_memory_low");
  EXPECT_NE(b.find("or on(hostname) (100 * cardiac_host_memory_available_bytes / "
                   "(cardiac_host_memory_total_bytes > 0) < 10 and on(hostname) "
                   "ALERTS{alertname=\\\"host_memory_low\\\", alertstate=\\\"firing\\\"})"),
            std::string::npos)
      << b;
}

TEST(PromRules, ExpectedGpusAndAbsence) {
  auto parsed = rules::parse_rules(R"(
[[rule]]
name = "gpu_count_below_expected"
kind = "absence"
expected_gpus = 8
for = "2m"
severity = "critical"
description = "only {value} of 8 GPUs visible"

[[rule]]
name = "temperature_missing"
kind = "absence"
metric = "gpu_temperature"
for = "10m"
)",
                                   "test");
  ASSERT_TRUE(parsed.has_value());
  std::vector<std::string> skipped;
  const std::string yaml = export_prometheus_rules(*parsed, &skipped);
  EXPECT_TRUE(skipped.empty());
  const std::string count = alert_block(yaml, "gpu_count_below_expected");
  EXPECT_NE(count.find("(count by (hostname) (cardiac_gpu_up) or on(hostname) 0 * "
                       "cardiac_nvml_available) < 8"),
            std::string::npos)
      << count;
  EXPECT_NE(count.find("for: \"2m\""), std::string::npos);
  const std::string missing = alert_block(yaml, "temperature_missing");
  EXPECT_NE(missing.find("absent_over_time(cardiac_gpu_temperature_celsius[10m])"),
            std::string::npos);
  EXPECT_EQ(missing.find("for:"), std::string::npos);
}

TEST(PromRules, DurationsAndQuoting) {
  EXPECT_EQ(prometheus_duration(300 * kNsPerSec), "5m");
  EXPECT_EQ(prometheus_duration(3600 * kNsPerSec), "1h");
  EXPECT_EQ(prometheus_duration(90 * kNsPerSec), "90s");
  EXPECT_EQ(prometheus_duration(1500 * 1'000'000LL), "1500ms");
  EXPECT_EQ(yaml_quote("a \"b\" \\ c\n\x01"), "\"a \\\"b\\\" \\\\ c\\x0a\\x01\"");
  EXPECT_EQ(yaml_quote("5 °C"), "\"5 °C\"");
}

}  // namespace
}  // namespace cardiac::promrules
