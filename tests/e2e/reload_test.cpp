// SPDX-License-Identifier: Apache-2.0
// `systemctl reload cardiac` is SIGHUP: the running agent re-reads its configuration and rules
// file, takes over new alert rules while its alerts and history carry on, and keeps what it
// runs when the new file does not parse.
#include <signal.h>

#include <gtest/gtest.h>

#include <regex>

#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

// GPU 1 of the thermal-throttle scenario is at 88 °C, the others near 30 °C.
std::string rules_text(int warm_threshold) {
  return R"([[rule]]
name = "test_gpu_hot"
metric = "gpu_temperature"
op = ">="
threshold = 85
clear = 80
for = "1s"
severity = "critical"

[[rule]]
name = "test_gpu_warm"
metric = "gpu_temperature"
op = ">="
threshold = )" +
         std::to_string(warm_threshold) + R"(
for = "1s"
severity = "warning"
)";
}

nlohmann::json open_alerts(const AgentProcess& agent) {
  auto [code, body] = agent.get("/api/v1/alerts");
  if (code != 200) return nlohmann::json::array();
  return nlohmann::json::parse(body);
}

std::vector<nlohmann::json> alerts_of(const nlohmann::json& alerts, const std::string& rule) {
  std::vector<nlohmann::json> out;
  for (const auto& a : alerts) {
    if (a["rule"] == rule) out.push_back(a);
  }
  return out;
}

double samples_total(const AgentProcess& agent) {
  static const std::regex kLine(R"(\ncardiac_agent_samples_total(\{[^}]*\})? ([0-9.e+]+))");
  const std::string metrics = "\n" + agent.get("/metrics").second;
  std::smatch m;
  return std::regex_search(metrics, m, kLine) ? std::stod(m[2]) : -1;
}

// An agent on the thermal scenario (no timeline: GPU 1 stays hot) with a rules file of its own,
// started with `test_gpu_hot` firing on GPU 1.
class Reload : public ::testing::Test {
 protected:
  void SetUp() override {
    sc_ = scenario("thermal-throttle.json");
    sc_.erase("timeline");
    agent_ = std::make_unique<AgentProcess>(sc_.dump(), "");
    rules_ = agent_->dir() + "/rules.toml";
    std::ofstream(rules_) << rules_text(200);
    // Every notification, appended by an exec notifier (its table goes before [agent]).
    notes_ = agent_->dir() + "/notes.json";
    std::string cfg = read_text(agent_->config_path());
    cfg.insert(
        cfg.find("[agent]"),
        "[[notifier]]\ntype = \"exec\"\nargv = [\"/usr/bin/tee\", \"-a\", \"" + notes_ + "\"]\n");
    std::ofstream(agent_->config_path(), std::ios::trunc) << cfg;
    agent_->agent_keys("interval = \"200ms\"\nrules = \"" + rules_ + "\"\ndefault_rules = false\n");
    agent_->capture_stderr();
    ASSERT_TRUE(agent_->start());
    ASSERT_TRUE(
        eventually([&] { return alerts_of(open_alerts(*agent_), "test_gpu_hot").size() == 1; }));
    hot_ = alerts_of(open_alerts(*agent_), "test_gpu_hot")[0];
  }
  [[nodiscard]] std::string log() const { return read_text(agent_->dir() + "/agent.stderr"); }

  // How many notifications name `rule` (each carries "alertname":"<rule>").
  [[nodiscard]] std::size_t notified(const std::string& rule) const {
    const std::string text = read_text(notes_);
    const std::string key = "\"alertname\":\"" + rule + "\"";
    std::size_t n = 0;
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) ++n;
    return n;
  }

  // Sets GPU 1's temperature and waits until the agent has sampled it.
  [[nodiscard]] bool gpu1_at(int celsius) {
    sc_["devices"][1]["temperature"] = celsius;
    agent_->write_scenario(sc_.dump());
    const std::string want = "\"temperature\":" + std::to_string(celsius);
    return eventually(
        [&] { return agent_->get("/api/v1/status").second.find(want) != std::string::npos; });
  }

  nlohmann::json sc_;
  std::unique_ptr<AgentProcess> agent_;
  std::string rules_;
  std::string notes_;
  nlohmann::json hot_;
};

TEST_F(Reload, SighupTakesOverAChangedRuleAndKeepsAlertsAndHistory) {
  EXPECT_EQ(hot_["labels"]["gpu"], "1");
  EXPECT_TRUE(alerts_of(open_alerts(*agent_), "test_gpu_warm").empty());
  ASSERT_TRUE(eventually([&] { return samples_total(*agent_) > 0; }));
  const double samples_before = samples_total(*agent_);

  ASSERT_TRUE(eventually([&] { return notified("test_gpu_hot") == 1; })) << log();
  // Between clear (80) and threshold (85): firing only for an engine that knows it fired.
  ASSERT_TRUE(gpu1_at(83));

  // The warm rule's threshold drops below every GPU's temperature.
  std::ofstream(rules_, std::ios::trunc) << rules_text(20);
  agent_->signal(SIGHUP);
  nlohmann::json alerts;
  ASSERT_TRUE(eventually([&] {
    alerts = open_alerts(*agent_);
    return alerts_of(alerts, "test_gpu_warm").size() == 8 && notified("test_gpu_warm") == 8;
  })) << alerts.dump(1)
      << log();
  // The hot alert was taken over as firing: not pending again for its `for`, so not notified
  // again when that `for` (the same as the warm rule's, counted from the same sample) ran out.
  EXPECT_EQ(notified("test_gpu_hot"), 1u) << read_text(notes_);

  // The same process, its alert carried on (not closed and opened again), history going on.
  EXPECT_TRUE(agent_->alive());
  auto hot = alerts_of(alerts, "test_gpu_hot");
  ASSERT_EQ(hot.size(), 1u) << alerts.dump(1);
  EXPECT_EQ(hot[0]["id"], hot_["id"]);
  EXPECT_EQ(hot[0]["started_ns"], hot_["started_ns"]);
  EXPECT_EQ(hot[0]["state"], "firing");
  EXPECT_GT(samples_total(*agent_), samples_before);

  // Below clear the new rules resolve the alert they took over.
  ASSERT_TRUE(gpu1_at(70));
  ASSERT_TRUE(eventually([&] { return alerts_of(open_alerts(*agent_), "test_gpu_hot").empty(); }))
      << read_text(notes_);
  EXPECT_TRUE(eventually([&] { return notified("test_gpu_hot") == 2; })) << read_text(notes_);
  auto all = nlohmann::json::parse(agent_->get("/api/v1/alerts?all=1").second);
  ASSERT_EQ(alerts_of(all, "test_gpu_hot").size(), 1u) << all.dump(1);
  EXPECT_EQ(alerts_of(all, "test_gpu_hot")[0]["id"], hot_["id"]);
  EXPECT_EQ(alerts_of(all, "test_gpu_hot")[0]["state"], "resolved");
  EXPECT_EQ(agent_->terminate(), 0);
}

TEST_F(Reload, MalformedConfigurationIsLoggedAndTheRunningOneKept) {
  const std::string good = read_text(agent_->config_path());
  // A syntax error on a line of its own at the end of the file.
  const auto bad_line = std::count(good.begin(), good.end(), '\n') + 1;
  std::ofstream(agent_->config_path(), std::ios::trunc) << good << "interval = = 1\n";
  // The rules change too: nothing of a failed reload may be taken over.
  std::ofstream(rules_, std::ios::trunc) << rules_text(20);
  agent_->signal(SIGHUP);
  const std::string where = agent_->config_path() + ":" + std::to_string(bad_line) + ":";
  ASSERT_TRUE(eventually([&] { return log().find(where) != std::string::npos; })) << log();
  EXPECT_NE(log().find("reload failed, the agent keeps its previous configuration"),
            std::string::npos)
      << log();
  EXPECT_TRUE(agent_->alive());
  EXPECT_EQ(agent_->get("/healthz").first, 200);

  // A rules file that does not parse is refused the same way, naming its line.
  std::ofstream(agent_->config_path(), std::ios::trunc) << good;
  std::ofstream(rules_, std::ios::trunc) << rules_text(20) << "threshold = [\n";
  agent_->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return log().find(rules_ + ":") != std::string::npos; })) << log();
  EXPECT_TRUE(agent_->alive());
  // Ten samples (2 s, past the rules' 1 s `for`) later the old rules are still the ones evaluated.
  const double later = samples_total(*agent_) + 10;
  ASSERT_TRUE(eventually([&] { return samples_total(*agent_) >= later; }));
  auto alerts = open_alerts(*agent_);
  EXPECT_TRUE(alerts_of(alerts, "test_gpu_warm").empty()) << alerts.dump(1);
  ASSERT_EQ(alerts_of(alerts, "test_gpu_hot").size(), 1u);
  EXPECT_EQ(alerts_of(alerts, "test_gpu_hot")[0]["id"], hot_["id"]);

  // A key only a restart applies is named in the log; a valid reload still works afterwards.
  std::ofstream(rules_, std::ios::trunc) << rules_text(20);
  std::ofstream(agent_->config_path(), std::ios::app) << "host_interval = \"7s\"\n";
  agent_->signal(SIGHUP);
  ASSERT_TRUE(eventually([&] {
    return alerts_of(open_alerts(*agent_), "test_gpu_warm").size() == 8;
  })) << log();
  EXPECT_NE(log().find("[agent] host_interval changed"), std::string::npos) << log();
  EXPECT_EQ(agent_->terminate(), 0);
}

}  // namespace
}  // namespace cardiac::e2e
