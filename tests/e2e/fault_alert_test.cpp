// SPDX-License-Identifier: Apache-2.0
// A GPU fault reaches a person: kernel-log lines appended to the followed log raise one alert
// per (GPU, fault class) that the notifiers receive, with the count of lines; the job queue's
// automatic fence of that GPU is an alert with its reason, and clearing it resolves the alert.
#include <gtest/gtest.h>

#include "store/db.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

// GPU 1 of healthy-8xh100.json sits on 0000:2a:00.0.
constexpr const char* kXid79 =
    "[  123.456789] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has "
    "fallen off the bus.\n";

// An agent on the healthy fixture with an exec notifier appending every notification to
// notes.json, and `extra` configuration (before [agent]).
std::unique_ptr<AgentProcess> agent_with_notifier(const std::string& extra, std::string& notes) {
  auto agent = std::make_unique<AgentProcess>(scenario("healthy-8xh100.json").dump(), "");
  notes = agent->dir() + "/notes.json";
  std::string cfg = read_text(agent->config_path());
  cfg.insert(cfg.find("[agent]"),
             "[[notifier]]\ntype = \"exec\"\nargv = [\"/usr/bin/tee\", \"-a\", \"" + notes +
                 "\"]\n" + extra);
  std::ofstream(agent->config_path(), std::ios::trunc) << cfg;
  agent->agent_keys("interval = \"200ms\"\n");
  return agent;
}

// The notifications written so far, one JSON body per line.
std::vector<nlohmann::json> notifications(const std::string& notes) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_text(notes));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("alerts")) continue;
    for (const auto& a : j["alerts"]) out.push_back(a);
  }
  return out;
}

std::vector<nlohmann::json> notified(const std::string& notes, const std::string& alertname,
                                     const std::string& status) {
  std::vector<nlohmann::json> out;
  for (const auto& a : notifications(notes)) {
    if (a["labels"].value("alertname", "") == alertname && a.value("status", "") == status) {
      out.push_back(a);
    }
  }
  return out;
}

std::vector<nlohmann::json> open_alerts(const AgentProcess& agent, const std::string& rule) {
  std::vector<nlohmann::json> out;
  auto body = agent.get("/api/v1/alerts");
  auto all = nlohmann::json::parse(body.second, nullptr, false);
  if (!all.is_array()) return out;
  for (const auto& a : all) {
    if (a.value("rule", "") == rule) out.push_back(a);
  }
  return out;
}

TEST(FaultAlerts, XidLineRaisesOneAlertThatTheNotifierReceives) {
  std::string notes;
  auto agent = agent_with_notifier("", notes);
  ASSERT_TRUE(agent->start());
  std::ofstream(agent->dir() + "/kern.log", std::ios::app) << kXid79;
  ASSERT_TRUE(eventually([&] { return !notified(notes, "gpu_fallen_off_bus", "firing").empty(); }))
      << read_text(notes);
  auto n = notified(notes, "gpu_fallen_off_bus", "firing")[0];
  EXPECT_EQ(n["labels"]["severity"], "critical");
  EXPECT_EQ(n["labels"]["gpu"], "1");
  EXPECT_EQ(n["labels"]["pci_bus_id"], "0000:2a:00.0");
  EXPECT_NE(n["annotations"]["description"].get<std::string>().find("fallen off the bus"),
            std::string::npos)
      << n.dump();

  // Thousands more lines of the same fault: still one alert, carrying the count.
  {
    std::ofstream log(agent->dir() + "/kern.log", std::ios::app);
    for (int i = 0; i < 2999; ++i) log << kXid79;
  }
  ASSERT_TRUE(eventually([&] {
    auto open = open_alerts(*agent, "gpu_fallen_off_bus");
    return open.size() == 1 && open[0]["value"] == 3000;
  })) << agent->get("/api/v1/alerts").second;
  EXPECT_EQ(notified(notes, "gpu_fallen_off_bus", "firing").size(), 1u) << read_text(notes);
  EXPECT_EQ(agent->terminate(), 0);
}

TEST(FaultAlerts, AutomaticFenceAndItsClearAreAlertsWithTheirReason) {
  std::string notes;
  auto agent = agent_with_notifier("[queue]\nenabled = true\n", notes);
  ASSERT_TRUE(agent->start());
  std::ofstream(agent->dir() + "/kern.log", std::ios::app) << kXid79;
  ASSERT_TRUE(eventually([&] { return !notified(notes, "gpu_fenced", "firing").empty(); }))
      << read_text(notes);
  auto fenced = notified(notes, "gpu_fenced", "firing")[0];
  EXPECT_EQ(fenced["labels"]["gpu"], "1");
  EXPECT_EQ(fenced["labels"]["severity"], "critical");
  const std::string why = fenced["annotations"]["description"];
  EXPECT_NE(why.find("fenced automatically"), std::string::npos) << why;
  EXPECT_NE(why.find("Xid 79"), std::string::npos) << why;

  auto clear = run_cardiac({"fence", "clear", "1"}, {{"CARDIAC_STATE_DIR", agent->state_dir()}});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  ASSERT_TRUE(eventually([&] { return !notified(notes, "gpu_fenced", "resolved").empty(); }))
      << read_text(notes);
  const std::string cleared =
      notified(notes, "gpu_fenced", "resolved")[0]["annotations"]["description"];
  EXPECT_NE(cleared.find("cleared by root"), std::string::npos) << cleared;
  EXPECT_EQ(agent->terminate(), 0);
}

// Alerts open when the agent stops are taken up by the next run: on a healthy machine they
// resolve (stored and notified once), while a fence that is still in place keeps its alert.
TEST(FaultAlerts, RestartOnAHealthyMachineResolvesWhatWasOpen) {
  std::string notes;
  auto agent = agent_with_notifier("[queue]\nenabled = true\n", notes);
  agent->write_scenario(scenario("thermal-throttle.json").dump());
  ASSERT_TRUE(agent->start());
  std::ofstream(agent->dir() + "/kern.log", std::ios::app) << kXid79;
  for (const char* rule : {"gpu_temperature_above_slowdown", "gpu_fallen_off_bus", "gpu_fenced"}) {
    ASSERT_TRUE(eventually([&] { return !notified(notes, rule, "firing").empty(); }))
        << rule << "\n"
        << read_text(notes);
  }
  EXPECT_EQ(agent->terminate(), 0);

  agent->write_scenario(scenario("healthy-8xh100.json").dump());
  ASSERT_TRUE(agent->start());
  for (const char* rule : {"gpu_temperature_above_slowdown", "gpu_fallen_off_bus"}) {
    ASSERT_TRUE(eventually([&] { return !notified(notes, rule, "resolved").empty(); }))
        << rule << "\n"
        << agent->get("/api/v1/alerts").second;
    EXPECT_TRUE(open_alerts(*agent, rule).empty()) << agent->get("/api/v1/alerts").second;
    EXPECT_EQ(notified(notes, rule, "firing").size(), 1u) << read_text(notes);
  }
  // Fences are kept in the store: GPU 1 is still fenced, so its alert stays, not repeated.
  EXPECT_EQ(open_alerts(*agent, "gpu_fenced").size(), 1u) << agent->get("/api/v1/alerts").second;
  EXPECT_EQ(notified(notes, "gpu_fenced", "firing").size(), 1u) << read_text(notes);
  auto listed = run_cardiac({"alerts", "--json", "--state-dir", agent->state_dir()});
  EXPECT_EQ(listed.out.find("gpu_temperature_above_slowdown"), std::string::npos) << listed.out;
  EXPECT_EQ(agent->terminate(), 0);

  // A fence cleared while no agent recorded it (stopped between the two): the next run sees
  // the fence gone and resolves its alert.
  {
    auto db = store::Db::open(agent->state_dir() + "/cardiac.db");
    ASSERT_TRUE(db) << db.error().what();
    ASSERT_TRUE(
        db->exec("UPDATE fences SET cleared_ns = 1, cleared_by = 'root' "
                 "WHERE cleared_ns IS NULL"));
  }
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually([&] { return !notified(notes, "gpu_fenced", "resolved").empty(); }))
      << agent->get("/api/v1/alerts").second;
  EXPECT_TRUE(open_alerts(*agent, "gpu_fenced").empty()) << agent->get("/api/v1/alerts").second;
  EXPECT_EQ(agent->terminate(), 0);
}

}  // namespace
}  // namespace cardiac::e2e
