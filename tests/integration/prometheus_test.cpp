// SPDX-License-Identifier: Apache-2.0
// The agent with the real Prometheus and Alertmanager from Debian, all on loopback: Prometheus
// scrapes /metrics (native and dcgm-exporter names answer PromQL), promtool accepts our
// output and our exported rules, those rules fire in Prometheus on the thermal scenario, and
// the agent's own alert reaches Alertmanager and leaves it when resolved.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr const char* kAlertmanager = "/usr/bin/prometheus-alertmanager";
constexpr const char* kPromtool = "/usr/bin/promtool";

// A server of ours for the length of a test: started, killed, its directory removed.
class Daemon {
 public:
  Daemon(std::vector<std::string> argv, std::string dir) : dir_(std::move(dir)) {
    SpawnOptions o;
    o.argv = std::move(argv);
    o.pipe_stdin = false;
    o.pipe_stdout = false;
    int log = ::open((dir_ + "/daemon.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    o.pass_fds = {{log, 2}};
    auto c = Child::spawn(o);
    ::close(log);
    if (c) child_ = std::move(*c);
  }
  ~Daemon() {
    if (child_.running()) {
      child_.signal(SIGKILL);
      child_.wait();
    }
  }
  [[nodiscard]] std::string log() const { return read_text(dir_ + "/daemon.log"); }

 private:
  std::string dir_;
  Child child_;
};

nlohmann::json query(int port, const std::string& promql) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(5, 0);
  auto r = cli.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!r || r->status != 200) return nlohmann::json();
  return nlohmann::json::parse(r->body, nullptr, false);
}

// The first sample's value of an instant-vector query, or NaN.
double value_of(int port, const std::string& promql) {
  auto j = query(port, promql);
  if (!j.is_object() || j["data"]["result"].empty()) return std::nan("");
  return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
}

int run_tool(std::vector<std::string> argv, std::string* out) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.pipe_stdin = false;
  auto c = Child::spawn(o);
  if (!c) return -1;
  while (auto line = c->read_line_within(60 * kNsPerSec)) {
    *out += *line + "\n";
  }
  int st = c->wait();
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

class WithPrometheus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kPrometheus) || !std::filesystem::exists(kAlertmanager) ||
        !std::filesystem::exists(kPromtool)) {
      GTEST_SKIP() << "Prometheus, Alertmanager or promtool not installed (scripts/setup.sh)";
    }
  }
};

TEST_F(WithPrometheus, ScrapesQueriesAndFiresExportedRules) {
  AgentProcess agent(scenario("thermal-throttle.json").dump(), "");
  agent.agent_keys("interval = \"500ms\"\nmetrics_compat = \"dcgm\"\n");
  ASSERT_TRUE(agent.start());

  // Our exported rules: promtool accepts them and Prometheus evaluates them.
  std::string rules = agent.dir() + "/cardiac-rules.yml";
  ASSERT_EQ(run_cardiac({"export", "prometheus-rules", "-o", rules}).exit_code, 0);
  std::string out;
  ASSERT_EQ(run_tool({kPromtool, "check", "rules", rules}, &out), 0) << out;

  int prom_port = free_port();
  std::string prom_dir = agent.dir() + "/prometheus";
  std::filesystem::create_directories(prom_dir);
  std::ofstream(prom_dir + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "rule_files:\n  - " << rules << "\n"
      << "scrape_configs:\n  - job_name: cardiac\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << agent.port() << "']\n";
  Daemon prom({kPrometheus, "--config.file=" + prom_dir + "/prometheus.yml",
               "--storage.tsdb.path=" + prom_dir + "/data",
               "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
              prom_dir);

  ASSERT_TRUE(eventually(
      [&] { return value_of(prom_port, "cardiac_gpu_temperature_celsius{gpu=\"1\"}") == 88; }, 60))
      << prom.log();
  EXPECT_EQ(value_of(prom_port, "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"}"), 88);
  EXPECT_EQ(value_of(prom_port, "count(cardiac_gpu_up == 1)"), 8);
  EXPECT_EQ(value_of(prom_port,
                     "cardiac_gpu_clock_event_reason{gpu=\"1\",reason=\"hw_thermal_slowdown\"}"),
            1);
  // GPU 1 is above its slowdown threshold: the exported rule fires in Prometheus.
  EXPECT_TRUE(eventually(
      [&] {
        return value_of(prom_port,
                        "ALERTS{alertname=\"gpu_temperature_above_slowdown\",alertstate=\"firing\","
                        "gpu=\"1\"}") == 1;
      },
      60))
      << prom.log();
}

TEST_F(WithPrometheus, PromtoolAcceptsTheNativeMetrics) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  std::string metrics;
  ASSERT_TRUE(eventually([&] {
    metrics = agent.get("/metrics").second;
    return metrics.find("cardiac_gpu_up{") != std::string::npos;
  }));
  std::string file = agent.dir() + "/metrics.txt";
  std::ofstream(file) << metrics;
  std::string out;
  // promtool reads the exposition on stdin.
  EXPECT_EQ(run_tool({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + file}, &out),
            0)
      << out;
  EXPECT_EQ(out, "");
}

TEST_F(WithPrometheus, AlertReachesAlertmanagerAndResolves) {
  int am_port = free_port();
  auto sc = scenario("thermal-throttle.json");
  sc.erase("timeline");
  AgentProcess agent(sc.dump(), "[[notifier]]\ntype = \"alertmanager\"\nurl = \"http://127.0.0.1:" +
                                    std::to_string(am_port) + "\"\n");
  std::string rules = agent.dir() + "/rules.toml";
  std::ofstream(rules) << "[[rule]]\nname = \"test_gpu_hot\"\nmetric = \"gpu_temperature\"\n"
                          "op = \">=\"\nthreshold = 85\nclear = 80\nfor = \"1s\"\n"
                          "severity = \"critical\"\ndescription = \"GPU {gpu} at {value} °C\"\n";
  agent.agent_keys("interval = \"200ms\"\ndefault_rules = false\nrules = \"" + rules + "\"\n");

  std::string am_dir = agent.dir() + "/alertmanager";
  std::filesystem::create_directories(am_dir);
  std::ofstream(am_dir + "/alertmanager.yml")
      << "route:\n  receiver: none\n  group_wait: 1s\nreceivers:\n  - name: none\n";
  Daemon am(
      {kAlertmanager, "--config.file=" + am_dir + "/alertmanager.yml",
       "--storage.path=" + am_dir + "/data",
       "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="},
      am_dir);
  httplib::Client cli("127.0.0.1", am_port);
  auto active = [&]() -> nlohmann::json {
    auto r = cli.Get("/api/v2/alerts?active=true&silenced=false&inhibited=false");
    if (!r || r->status != 200) return nlohmann::json();
    return nlohmann::json::parse(r->body, nullptr, false);
  };
  ASSERT_TRUE(eventually([&] { return active().is_array(); }, 60)) << am.log();
  ASSERT_TRUE(agent.start());

  nlohmann::json alerts;
  ASSERT_TRUE(eventually(
      [&] {
        alerts = active();
        return alerts.is_array() && !alerts.empty();
      },
      60))
      << am.log();
  EXPECT_EQ(alerts[0]["labels"]["alertname"], "test_gpu_hot");
  EXPECT_EQ(alerts[0]["labels"]["gpu"], "1");
  EXPECT_EQ(alerts[0]["labels"]["severity"], "critical");

  sc["devices"][1]["temperature"] = 70;  // below the clear threshold
  agent.write_scenario(sc.dump());
  EXPECT_TRUE(eventually(
      [&] {
        auto a = active();
        return a.is_array() && a.empty();
      },
      60))
      << am.log();
}

}  // namespace
}  // namespace cardiac::e2e
