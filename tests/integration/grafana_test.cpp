// SPDX-License-Identifier: Apache-2.0
// The Grafana dashboard against a real Prometheus: two agents on the fake NVML (a healthy node
// and one with an uncorrectable ECC error and Xids), scraped with the prometheus.yml of
// docs/grafana.md at 1 s. Every template variable resolves and every target of every panel of
// `cardiac export grafana-dashboard` returns data; with the agents in dcgm-exporter compat mode
// so do the dcgm dashboard's targets and the queries of NVIDIA's dcgm-exporter dashboard.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>

#include "metrics/registry.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/integration/prometheus_process.h"

namespace cardiac::e2e {
namespace {

using nlohmann::json;

// Grafana's $__rate_interval is at least four scrape intervals (4 s here); 10 s keeps two
// successful scrapes in the window on a loaded machine.
constexpr const char* kRateInterval = "10s";
constexpr const char* kRange = "1m";

// The prometheus.yml block of docs/grafana.md, pointed at these agents and rules, scraping
// every second: the documented configuration is the one under test.
std::string documented_config(const std::vector<int>& ports, const std::string& rules) {
  const std::string doc = read_text(std::string(CARDIAC_SOURCE_DIR) + "/docs/grafana.md");
  const std::string marker = "<!-- prometheus.yml, run by tests/integration/grafana_test.cpp -->";
  auto at = doc.find(marker);
  if (at == std::string::npos) return "";
  at = doc.find("```yaml\n", at);
  const auto end = doc.find("```\n", at + 8);
  if (at == std::string::npos || end == std::string::npos) return "";
  std::string yml = doc.substr(at + 8, end - at - 8);
  auto replace = [&](const std::string& from, const std::string& to) {
    const auto p = yml.find(from);
    if (p == std::string::npos) {
      yml.clear();
      return;
    }
    yml.replace(p, from.size(), to);
  };
  std::string targets;
  for (int p : ports)
    targets +=
        (targets.empty() ? "'" : ", '") + std::string("127.0.0.1:") + std::to_string(p) + "'";
  replace("scrape_interval: 15s", "scrape_interval: 1s");
  replace("evaluation_interval: 15s", "evaluation_interval: 1s");
  replace("/etc/prometheus/cardiac-rules.yml", rules);
  replace("'gpu-node-1:9847', 'gpu-node-2:9847'", targets);
  return yml;
}

// Grafana's rendering of an "All" multi-value variable in a regex matcher: the values,
// regex-escaped, as an alternation.
std::string all_of(const std::vector<std::string>& values) {
  std::string out = "(";
  for (const auto& v : values) {
    if (out.size() > 1) out += "|";
    for (char c : v) {
      // One backslash for the regex, doubled inside the PromQL string.
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += "\\\\";
      out += c;
    }
  }
  return out + ")";
}

std::string substitute(std::string expr, const std::map<std::string, std::string>& vars) {
  // Longest names first, so that $gpu never eats the start of a longer name.
  std::vector<std::pair<std::string, std::string>> all(vars.begin(), vars.end());
  all.emplace_back("__rate_interval", kRateInterval);
  all.emplace_back("__range", kRange);
  all.emplace_back("__interval", "1s");
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [name, value] : all) {
    for (const std::string& token : {"${" + name + "}", "$" + name}) {
      for (auto at = expr.find(token); at != std::string::npos; at = expr.find(token, at)) {
        expr.replace(at, token.size(), value);
        at += value.size();
      }
    }
  }
  return expr;
}

struct Dashboard {
  json panels;
  std::map<std::string, std::string> vars;  // name -> the "All" value
};

class FleetWithPrometheus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kPrometheus) || !std::filesystem::exists(kPromtool)) {
      GTEST_SKIP() << "Prometheus or promtool not installed (apt-get install prometheus)";
    }
  }

  // Starts the two agents (compat mode or not), the rules file and Prometheus; waits until
  // both targets have been scraped a few times and the faulty node's Xids are in.
  void start(bool dcgm, const std::vector<std::string>& rule_flags = {}) {
    const std::string keys =
        std::string("interval = \"200ms\"\n") + (dcgm ? "metrics_compat = \"dcgm\"\n" : "");
    auto healthy = scenario("healthy-8xh100.json");
    // Pre-Ampere GPUs retire pages instead of remapping rows; give this node's GPUs the
    // counters so that the retired-pages panel has a source (the H100 fixtures have none).
    for (auto& d : healthy["devices"]) {
      d["retired_pages_sbe"] = 0;
      d["retired_pages_dbe"] = 0;
      d["retired_pages_pending"] = false;
    }
    healthy_ = std::make_unique<AgentProcess>(healthy.dump(), "");
    healthy_->agent_keys(keys);
    faulty_ = std::make_unique<AgentProcess>(scenario("ecc-dbe.json").dump(), "");
    faulty_->agent_keys(keys);
    ASSERT_TRUE(healthy_->start());
    ASSERT_TRUE(faulty_->start());

    const std::string rules = healthy_->dir() + "/cardiac-rules.yml";
    std::vector<std::string> export_args = {"export", "prometheus-rules", "-o", rules};
    export_args.insert(export_args.end(), rule_flags.begin(), rule_flags.end());
    auto exported = run_cardiac(export_args);
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const std::string config = documented_config({healthy_->port(), faulty_->port()}, rules);
    ASSERT_FALSE(config.empty()) << "no usable prometheus.yml block in docs/grafana.md";
    prom_dir_ = healthy_->dir() + "/prometheus";
    std::filesystem::create_directories(prom_dir_);
    prom_ = std::make_unique<PrometheusProcess>(prom_dir_, config);

    // A job through the queue, so that its wait and per-user GPU time exist.
    auto job = run_cardiac({"submit", "--state-dir", healthy_->state_dir(), "-q", "--gpus", "1",
                            "--", "/bin/sleep", "1"});
    ASSERT_EQ(job.exit_code, 0) << job.err;

    const std::string xid = dcgm ? "DCGM_FI_DEV_XID_ERRORS" : "cardiac_gpu_xid_errors_total";
    ASSERT_TRUE(eventually(
        [&] {
          return prom_->value(
                     "min(count_over_time(cardiac_agent_samples_total{job=\"cardiac\"}[1m]))") >=
                     6 &&
                 prom_->value("count(up{job=\"cardiac\"} == 1)") == 2 &&
                 prom_->value("max(" + xid + ")") > 0 &&
                 prom_->value("sum(cardiac_queue_wait_seconds_count)") >= 1 &&
                 prom_->value("count(cardiac_queue_user_gpu_seconds_total)") >= 1;
        },
        90))
        << prom_->log();
  }

  // The dashboard as exported, with its variables resolved the way Grafana does.
  Dashboard export_dashboard(const std::vector<std::string>& flags) {
    Dashboard d;
    std::vector<std::string> args = {"export", "grafana-dashboard"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = run_cardiac(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    if (!j.is_object()) return d;
    d.panels = j["panels"];
    for (const auto& v : j["templating"]["list"]) {
      if (v["type"] != "query") continue;
      const std::string def = v["definition"];
      std::smatch m;
      static const std::regex kLabelValues(R"(^label_values\((.+),\s*(\w+)\)$)");
      EXPECT_TRUE(std::regex_match(def, m, kLabelValues)) << def;
      if (m.empty()) continue;
      // Grafana asks for the label's values among the series the selector matches.
      const std::string selector = substitute(m[1], d.vars);
      auto values = prom_->get("/api/v1/label/" + m[2].str() + "/values", {{"match[]", selector}});
      std::vector<std::string> list;
      for (const auto& x : values["data"]) list.push_back(x);
      EXPECT_GE(list.size(), v["name"] == "instance" ? 2u : 8u)
          << "variable " << v["name"] << " from " << selector << ": " << values.dump();
      d.vars[v["name"]] = all_of(list);
    }
    return d;
  }

  // Every target of every panel answers with at least one series.
  void expect_every_target_answers(const Dashboard& d) {
    int targets = 0;
    for (const auto& p : d.panels) {
      for (const auto& t : p.value("targets", json::array())) {
        ++targets;
        const std::string expr = substitute(t["expr"], d.vars);
        const json r = prom_->query(expr);
        EXPECT_EQ(r.value("status", ""), "success")
            << "panel \"" << p["title"].get<std::string>() << "\": " << expr << "\n"
            << r.dump();
        EXPECT_FALSE(r["data"]["result"].empty())
            << "panel \"" << p["title"].get<std::string>() << "\" returned nothing: " << expr;
      }
    }
    EXPECT_GE(targets, 10);
  }

  std::unique_ptr<AgentProcess> healthy_;
  std::unique_ptr<AgentProcess> faulty_;
  std::unique_ptr<PrometheusProcess> prom_;
  std::string prom_dir_;
};

TEST_F(FleetWithPrometheus, EveryPanelOfTheDashboardReturnsData) {
  // An Xid on one node is a storm here, so that the rule can be seen firing below.
  start(false, {"--xid-storm-nodes", "1"});
  if (HasFatalFailure()) return;
  expect_every_target_answers(export_dashboard({}));
  // The health panels tell the two nodes apart: the ECC node's GPU 2 fails.
  EXPECT_EQ(prom_->value("count(cardiac_gpu_health == 2)"), 1);
  // The exported rules loaded, fleet group included.
  auto groups = prom_->get("/api/v1/rules", {});
  EXPECT_NE(groups.dump().find("\"cardiac_fleet\""), std::string::npos) << prom_->log();

  // The nodes cardiac_fleet_xid_storm counts. The healthy node has had no Xid; its first one
  // (a new counter series, which increase() cannot see) must make it count through the last
  // Xid's change, and the storm (one node is enough here) fire.
  const std::string healthy = "127.0.0.1:" + std::to_string(healthy_->port());
  const std::string nodes =
      R"(count by (instance) (increase(cardiac_gpu_xid_errors_total{job="cardiac"}[10m]) > 0 )"
      R"(or changes(cardiac_gpu_last_xid{job="cardiac"}[10m]) > 0))";
  auto counts_healthy = [&] {
    return prom_->query(nodes).dump().find("\"" + healthy + "\"") != std::string::npos;
  };
  EXPECT_FALSE(counts_healthy());
  std::ofstream(healthy_->dir() + "/kern.log", std::ios::app)
      << "[  1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n";
  EXPECT_TRUE(eventually(counts_healthy, 60)) << prom_->query(nodes).dump();
  const std::string storm = R"(ALERTS{alertname="cardiac_fleet_xid_storm", alertstate="firing"})";
  EXPECT_TRUE(eventually([&] { return prom_->value(storm) == 1; }, 60)) << prom_->log();
}

TEST_F(FleetWithPrometheus, CompatModeAnswersTheDcgmDashboards) {
  start(true);
  if (HasFatalFailure()) return;
  expect_every_target_answers(export_dashboard({"--compat", "dcgm"}));

  // NVIDIA's dcgm-exporter dashboard (grafana.com 12239): its variables and the queries whose
  // metrics cardiac exports in compat mode. The profiling fields DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  // and DCGM_FI_PROF_GR_ENGINE_ACTIVE are not among them; the check below keeps that list
  // honest.
  std::set<std::string> compat;
  for (const auto& m : metrics::metric_registry()) {
    if (!m.dcgm.name.empty()) compat.insert(std::string(m.dcgm.name));
  }
  Dashboard nvidia;
  for (const std::string label : {"instance", "gpu", "Hostname"}) {
    auto values =
        prom_->get("/api/v1/label/" + label + "/values", {{"match[]", "DCGM_FI_DEV_GPU_TEMP"}});
    std::vector<std::string> list;
    for (const auto& x : values["data"]) list.push_back(x);
    ASSERT_GE(list.size(), label == "gpu" ? 8u : 1u) << values.dump();
    nvidia.vars[label] = all_of(list);
  }
  const std::string f = R"({instance=~"$instance", gpu=~"$gpu"})";
  const std::vector<std::pair<std::string, std::string>> queries = {
      {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP" + f},
      {"DCGM_FI_DEV_GPU_TEMP", "avg(DCGM_FI_DEV_GPU_TEMP" + f + ")"},
      {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE" + f},
      {"DCGM_FI_DEV_POWER_USAGE", "sum(DCGM_FI_DEV_POWER_USAGE" + f + ")"},
      {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK" + f + " * 1000000"},
      {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL" + f},
      {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED" + f},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" + f},
      // The newer revision of the same dashboard selects by the exporter's Hostname label
      // (variable Hostname: label_values(DCGM_FI_DEV_GPU_TEMP, Hostname)).
      {"DCGM_FI_DEV_GPU_TEMP",
       R"(max(DCGM_FI_DEV_GPU_TEMP{Hostname=~"$Hostname", gpu=~"$gpu"}) by (Hostname, gpu, UUID))"},
      {"DCGM_FI_DEV_POWER_USAGE",
       R"(sum(max(DCGM_FI_DEV_POWER_USAGE{Hostname=~"$Hostname", gpu=~"$gpu"}) by (gpu)))"},
      {"DCGM_FI_DEV_FB_USED",
       R"(max(DCGM_FI_DEV_FB_USED{Hostname=~"$Hostname", gpu=~"$gpu"}) by (Hostname, gpu))"},
      // Its utilization panel reads a profiling field, which cardiac does not export.
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
       R"(max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=~"$Hostname", gpu=~"$gpu"}) by (Hostname, gpu))"},
  };
  std::set<std::string> not_exported;
  for (const auto& [metric, q] : queries) {
    if (!compat.count(metric)) {
      not_exported.insert(metric);
      continue;
    }
    const std::string expr = substitute(q, nvidia.vars);
    const json r = prom_->query(expr);
    EXPECT_FALSE(r["data"]["result"].empty()) << "dcgm-exporter dashboard query: " << expr;
  }
  EXPECT_EQ(not_exported, (std::set<std::string>{"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                                                 "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}));
}

TEST(GrafanaExport, WritesAFileAndRejectsBadFlags) {
  char tmpl[] = "/tmp/cardiac-grafana-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto r = run_cardiac({"export", "grafana-dashboard", "-o", dir + "/d.json", "--datasource",
                        "prom-main", "--job", "gpu-nodes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json j = json::parse(read_text(dir + "/d.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["panels"][1]["datasource"]["uid"], "prom-main");
  EXPECT_NE(j.dump().find(R"(up{job=\"gpu-nodes\"})"), std::string::npos);

  r = run_cardiac({"export", "grafana-dashboard", "--compat", "dcgm"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("cardiac export: left out Job queue / Queue GPUs: "), std::string::npos)
      << r.err;

  r = run_cardiac({"export", "grafana-dashboard", "--compat", "prometheus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--compat"), std::string::npos) << r.err;
  r = run_cardiac({"export", "grafana-dashboard", "--job", "a\"b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--job"), std::string::npos) << r.err;
  r = run_cardiac({"export", "grafana-dashboard", "-o", "/nonexistent-dir/d.json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot write /nonexistent-dir/d.json"), std::string::npos) << r.err;

  r = run_cardiac({"export", "prometheus-rules", "--no-fleet-rules"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("cardiac_fleet"), std::string::npos);
  r = run_cardiac({"export", "prometheus-rules", "--expected-gpus", "8", "--job", "gpu-nodes"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find(R"(instance:cardiac_gpus_answering:sum < 8)"), std::string::npos);
  EXPECT_NE(r.out.find(R"(up{job=\"gpu-nodes\"} == 0)"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cardiac::e2e
