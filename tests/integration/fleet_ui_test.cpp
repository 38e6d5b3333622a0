// SPDX-License-Identifier: Apache-2.0
// The fleet view in the two UIs against a real Prometheus scraping three agents on the fake
// NVML (healthy, a GPU lost, an uncorrectable ECC error) and a target where nothing listens:
// `cardiac top --fleet` under tmux (the nodes with their verdicts, a node expanded into its
// GPUs and alerts, q gives the terminal back; an unreachable Prometheus shown as an error),
// and the agent's GET /api/v1/fleet and dashboard Fleet tab (the healthy agent's [fleet] names
// that Prometheus; the ECC agent's names one that is down; the lost-GPU agent has none), the
// page driven in headless Chromium by tests/web/fleet_page.js. One Prometheus for all tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/tmux.h"
#include "tests/integration/prometheus_process.h"

namespace cardiac::e2e {
namespace {

using nlohmann::json;

// The pane's line that shows `part`, or -1.
int line_with(const std::string& pane, const std::string& part) {
  auto l = lines_of(pane);
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (has(l[i], part)) return static_cast<int>(i);
  }
  return -1;
}

std::string line(const std::string& pane, const std::string& part) {
  const int i = line_with(pane, part);
  return i < 0 ? "" : lines_of(pane)[static_cast<std::size_t>(i)];
}

class FleetUi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kPrometheus)) return;
    down_port = free_port();  // nothing listens there
    for (const char* s : {"healthy-8xh100.json", "gpu-lost.json", "ecc-dbe.json"}) {
      // A captured healthy host: this machine's own load must not make a node WARN.
      auto& a = agents.emplace_back(std::make_unique<AgentProcess>(
          scenario(s).dump(),
          "[host]\nroot = \"" + std::string(CARDIAC_FIXTURES_DIR) + "/hosts/old-kernel\"\n"));
      a->agent_keys("interval = \"200ms\"\n");
    }
    const std::string rules = agents[0]->dir() + "/cardiac-rules.yml";
    auto exported = run_cardiac({"export", "prometheus-rules", "-o", rules});
    if (exported.exit_code != 0) {
      setup_error = "export prometheus-rules: " + exported.err;
      return;
    }
    std::vector<int> ports;
    for (const auto& a : agents) ports.push_back(a->port());
    const std::string config = loopback_scrape_config(ports, down_port, rules);
    const std::string prom_dir = agents[0]->dir() + "/prometheus";
    std::filesystem::create_directories(prom_dir);
    prom = std::make_unique<PrometheusProcess>(prom_dir, config);
    // The healthy agent shows the fleet of this Prometheus; the ECC agent one that is down.
    std::ofstream(agents[0]->config_path(), std::ios::app)
        << "[fleet]\nprometheus = \"" << url() << "\"\ntimeout = \"5s\"\n";
    std::ofstream(agents[2]->config_path(), std::ios::app)
        << "[fleet]\nprometheus = \"http://127.0.0.1:" << down_port << "\"\ntimeout = \"2s\"\n";
    for (auto& a : agents) {
      if (!a->start()) {
        setup_error = "an agent did not start";
        return;
      }
    }
    if (!eventually(
            [&] {
              return prom->value("count(up{job=\"cardiac\"} == 1)") == 3 &&
                     prom->value("count(up{job=\"cardiac\"} == 0)") == 1 &&
                     prom->value("count(ALERTS{alertname=\"gpu_lost\",alertstate=\"firing\"})") ==
                         1 &&
                     prom->value("count(cardiac_gpu_health == 2)") >= 2;
            },
            90)) {
      setup_error = "Prometheus did not see the fleet in time:\n" + prom->log();
    }
  }
  static void TearDownTestSuite() {
    prom.reset();
    agents.clear();
  }
  void SetUp() override {
    if (!std::filesystem::exists(kPrometheus)) {
      GTEST_SKIP() << "Prometheus not installed (apt-get install prometheus)";
    }
    ASSERT_TRUE(setup_error.empty()) << setup_error;
  }

  static std::string url() { return "http://127.0.0.1:" + std::to_string(prom->port()); }
  static std::string instance(std::size_t i) {
    return "127.0.0.1:" + std::to_string(agents[i]->port());
  }
  static std::string down_instance() { return "127.0.0.1:" + std::to_string(down_port); }

  static inline std::vector<std::unique_ptr<AgentProcess>> agents;
  static inline int down_port = 0;
  static inline std::unique_ptr<PrometheusProcess> prom;
  static inline std::string setup_error;
};

std::string top_command(const std::string& args) {
  return "env LC_ALL=C.UTF-8 TERM=screen '" CARDIAC_BINARY "' top --fleet --interval 0.5 " + args;
}

void expect_restored(const Tmux& t) {
  ASSERT_TRUE(t.wait_for([&](const std::string& p) { return has(p, "tty="); })) << t.capture();
  const std::string pane = t.capture();
  EXPECT_TRUE(has(pane, "exit=0")) << pane;
  EXPECT_TRUE(has(pane, "tty=sane")) << pane;
  EXPECT_EQ(t.display("#{alternate_on}"), "0");
  EXPECT_FALSE(has(pane, "cardiac top")) << pane;  // the view went with the alternate screen
}

TEST_F(FleetUi, TopListsTheNodesExpandsOneAndRestoresTheTerminal) {
  ASSERT_FALSE(tmux_path().empty()) << "tmux is not installed (scripts/setup.sh installs it)";
  Tmux t;
  // 132 columns: the INSTANCE column tells the agents apart (they share this host's name).
  ASSERT_TRUE(t.start(pane_script(top_command("--prometheus " + url())), 132, 30));
  ASSERT_TRUE(t.wait_for([&](const std::string& p) {
    return has(p, "4 nodes") && has(p, instance(1)) && has(p, down_instance());
  })) << t.capture();
  std::string pane = t.capture();
  EXPECT_TRUE(has(lines_of(pane)[0], "FAIL")) << pane;
  EXPECT_TRUE(has(lines_of(pane)[1], "nodes: 1 OK 0 WARN 2 FAIL 1 UNKNOWN")) << pane;
  EXPECT_TRUE(has(line(pane, instance(0)), " OK ")) << pane;
  EXPECT_TRUE(has(line(pane, instance(1)), " FAIL ")) << pane;
  EXPECT_TRUE(has(line(pane, instance(2)), " FAIL ")) << pane;
  EXPECT_TRUE(has(line(pane, down_instance()), " UNKNOWN ")) << pane;
  EXPECT_TRUE(has(line(pane, down_instance()), "not scraped")) << pane;
  EXPECT_EQ(t.display("#{alternate_on}"), "1");

  // Down to the lost-GPU node (nodes start on the fourth line), Enter: its GPUs and alert.
  const int row = line_with(pane, instance(1)) - 3;
  ASSERT_GE(row, 0) << pane;
  for (int i = 0; i < row; ++i) t.keys({"Down"});
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) {
    return has(p, "GPU VERDICT UTIL") && has(p, "alert gpu_lost [critical]");
  })) << t.capture();
  pane = t.capture();
  EXPECT_TRUE(has(line(pane, instance(1)), "▾")) << pane;
  // GPU 5 of the gpu-lost scenario: FAIL, no readings, why in words.
  const std::regex lost_gpu(R"(^ +5 FAIL +- +- +- +- .*(stopped|not answering))");
  bool found = false;
  for (const auto& l : lines_of(pane)) found = found || std::regex_search(l, lost_gpu);
  EXPECT_TRUE(found) << pane;

  // Enter again folds it; h shows the help, any key closes it; q quits.
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return !has(p, "GPU VERDICT UTIL"); }))
      << t.capture();
  t.keys({"h"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "any key closes it"); }));
  t.keys({"q"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "4 nodes"); }));
  t.keys({"q"});
  expect_restored(t);
}

TEST_F(FleetUi, TopShowsAnUnreachablePrometheusAsAnErrorAndStillQuits) {
  ASSERT_FALSE(tmux_path().empty()) << "tmux is not installed (scripts/setup.sh installs it)";
  Tmux t;
  ASSERT_TRUE(t.start(
      pane_script(top_command("--prometheus http://127.0.0.1:" + std::to_string(down_port))), 100,
      20));
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "no fleet view: "); }))
      << t.capture();
  const std::string pane = t.capture();
  EXPECT_TRUE(has(lines_of(pane)[1], "Prometheus not read: ")) << pane;
  EXPECT_TRUE(has(lines_of(pane)[0], "UNKNOWN")) << pane;
  EXPECT_FALSE(has(pane, "NODE ")) << pane;  // no table that would read as an empty fleet
  t.keys({"q"});
  expect_restored(t);
}

TEST_F(FleetUi, AgentAnswersTheFleetOnlyWithFleetConfigured) {
  auto [status, body] = agents[0]->get("/api/v1/fleet");
  ASSERT_EQ(status, 200) << body;
  const json j = json::parse(body, nullptr, false);
  EXPECT_EQ(j["schema"], "cardiac.fleet/v1");
  EXPECT_EQ(j["verdict"], "fail");
  ASSERT_EQ(j["nodes"].size(), 4u) << body;
  EXPECT_TRUE(j["read_at"].is_string());
  std::map<std::string, std::string> verdicts;
  for (const auto& n : j["nodes"]) verdicts[n["instance"]] = n["verdict"];
  EXPECT_EQ(verdicts[instance(0)], "ok");
  EXPECT_EQ(verdicts[instance(1)], "fail");
  EXPECT_EQ(verdicts[down_instance()], "unknown");

  auto [none, none_body] = agents[1]->get("/api/v1/fleet");
  EXPECT_EQ(none, 501) << none_body;
  EXPECT_TRUE(has(none_body, "[fleet] prometheus")) << none_body;

  auto [down, down_body] = agents[2]->get("/api/v1/fleet");
  EXPECT_EQ(down, 503) << down_body;
  EXPECT_TRUE(has(down_body, "could not connect")) << down_body;

  // The overview tells the page whether to offer its Fleet tab.
  EXPECT_EQ(json::parse(agents[0]->get("/api/v1/dashboard/overview").second)["fleet"], true);
  EXPECT_EQ(json::parse(agents[1]->get("/api/v1/dashboard/overview").second)["fleet"], false);
}

// node from PATH, or empty.
std::string node_path() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/node").c_str(), X_OK) == 0) return dir + "/node";
  }
  return "";
}

TEST_F(FleetUi, DashboardFleetTabShowsTheNodesWithTheirVerdicts) {
  const std::string source = CARDIAC_SOURCE_DIR;
  if (node_path().empty() || !std::filesystem::exists("/usr/bin/chromium") ||
      !std::filesystem::exists(source + "/web/node_modules/playwright-core")) {
    GTEST_SKIP() << "node, /usr/bin/chromium or web/node_modules/playwright-core missing "
                    "(scripts/setup.sh installs them)";
  }
  const json expect = {{"with", "http://" + instance(0)},
                       {"without", "http://" + instance(1)},
                       {"broken", "http://" + instance(2)},
                       {"nodes",
                        {{instance(0), "ok"},
                         {instance(1), "fail"},
                         {instance(2), "fail"},
                         {down_instance(), "unknown"}}},
                       {"lost", instance(1)}};
  std::filesystem::create_directories(CARDIAC_ARTEFACTS_DIR);
  auto r = run_program({node_path(), source + "/tests/web/fleet_page.js", source,
                        CARDIAC_ARTEFACTS_DIR, expect.dump()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace cardiac::e2e
