// SPDX-License-Identifier: Apache-2.0
// `cardiac check`, `cardiac npd` and `cardiac export npd-config` end to end: against a running
// agent on the fake NVML (its verdicts and its kernel-log alerts), and without one (a local
// sample), with the exit codes the monitoring-plugin and node-problem-detector contracts name.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

// GPU 1 of healthy-8xh100.json sits on 0000:2a:00.0.
constexpr const char* kXid79 =
    "[  123.456789] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has "
    "fallen off the bus.\n";

// The host side is read from a captured healthy host, so that this machine's own load or a
// process stuck in D state does not turn an expected OK into a WARNING.
std::unique_ptr<AgentProcess> agent_on(const std::string& scenario_name) {
  auto agent = std::make_unique<AgentProcess>(
      scenario(scenario_name).dump(),
      "[host]\nroot = \"" + std::string(CARDIAC_FIXTURES_DIR) + "/hosts/old-kernel\"\n");
  agent->agent_keys("interval = \"200ms\"\n");
  return agent;
}

// Started and judged its first sample (before that its status says "no sample yet").
bool sampled(AgentProcess& agent) {
  return agent.start() && eventually([&] {
           auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
           return j.is_object() && j.value("verdict", "UNKNOWN") != "UNKNOWN";
         });
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckE2E, HealthyAgentIsOkAndSaysItAskedTheAgent) {
  auto agent = agent_on("healthy-8xh100.json");
  ASSERT_TRUE(sampled(*agent));
  auto r = run_cardiac({"check", "--config", agent->config_path()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "CARDIAC OK - 8 GPUs OK (agent 127.0.0.1:")) << r.out;
  EXPECT_TRUE(has(r.out, "| gpus=8;;;0 gpus_ok=8;;;0 problems=0;;;0")) << r.out;
  auto npd = run_cardiac({"npd", "--config", agent->config_path()});
  EXPECT_EQ(npd.exit_code, 0) << npd.out;
  EXPECT_EQ(npd.out, "no critical GPU fault (8 GPUs)\n");
  auto xid = run_cardiac({"npd", "--condition", "xid", "--config", agent->config_path()});
  EXPECT_EQ(xid.exit_code, 0) << xid.out;
}

TEST(CheckE2E, LostGpuIsCriticalThroughTheAgent) {
  auto agent = agent_on("gpu-lost.json");
  ASSERT_TRUE(sampled(*agent));
  auto r = run_cardiac({"check", "--config", agent->config_path()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "CARDIAC CRITICAL - GPU 5")) << r.out;
  EXPECT_TRUE(has(r.out, "(agent 127.0.0.1:")) << r.out;
  auto j = run_cardiac({"check", "--json", "--config", agent->config_path()});
  EXPECT_EQ(j.exit_code, 2);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["status"], "CRITICAL");
  EXPECT_EQ(doc["gpus_ok"], 7);
  ASSERT_FALSE(doc["problems"].empty());
  EXPECT_EQ(doc["problems"][0]["gpu"], 5);
  auto npd = run_cardiac({"npd", "--config", agent->config_path()});
  EXPECT_EQ(npd.exit_code, 1) << npd.out;
  EXPECT_TRUE(has(npd.out, "GPU 5")) << npd.out;
}

// What only the kernel log tells: an Xid the agent read becomes CRITICAL for both contracts,
// and node-problem-detector's message stays within its limit.
TEST(CheckE2E, KernelLogXidReachesCheckAndNpd) {
  auto agent = agent_on("healthy-8xh100.json");
  ASSERT_TRUE(sampled(*agent));
  std::ofstream(agent->dir() + "/kern.log", std::ios::app) << kXid79;
  ASSERT_TRUE(eventually([&] {
    return run_cardiac({"check", "--config", agent->config_path()}).exit_code == 2;
  }));
  auto r = run_cardiac({"check", "--config", agent->config_path()});
  EXPECT_TRUE(has(r.out, "fallen off the bus")) << r.out;
  auto xid = run_cardiac(
      {"npd", "--condition", "xid", "--max-output", "40", "--config", agent->config_path()});
  EXPECT_EQ(xid.exit_code, 1) << xid.out;
  EXPECT_LE(xid.out.size(), 41u) << xid.out;  // the message and its newline
  EXPECT_TRUE(has(xid.out, "GPU 1")) << xid.out;
}

// No agent: a local sample of the fake NVML, saying so; the Xid condition cannot be judged.
TEST(CheckE2E, WithoutAnAgentSamplesLocallyAndSaysSo) {
  auto agent = agent_on("gpu-lost.json");  // only for its configuration; never started
  std::vector<std::pair<std::string, std::string>> env = {
      {"CARDIAC_FAKE_NVML_SCENARIO", agent->dir() + "/scenario.json"}};
  auto r = run_cardiac({"check", "--config", agent->config_path()}, env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "(local sample)")) << r.out;
  EXPECT_TRUE(has(r.out, "note: no agent answers at 127.0.0.1:")) << r.out;
  auto xid = run_cardiac({"npd", "--condition", "xid", "--config", agent->config_path()}, env);
  EXPECT_EQ(xid.exit_code, 2) << xid.out;
  auto healthy = scenario("healthy-8xh100.json").dump();
  agent->write_scenario(healthy);
  auto ok = run_cardiac({"check", "--config", agent->config_path()}, env);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

TEST(CheckE2E, NoDriverIsUnknownAndBadFlagsAreUnknownToo) {
  auto agent = agent_on("healthy-8xh100.json");
  std::string cfg = read_text(agent->config_path());
  auto at = cfg.find(FAKE_NVML_PATH);
  cfg.replace(at, std::string(FAKE_NVML_PATH).size(), agent->dir() + "/no-such-libnvidia-ml.so");
  std::ofstream(agent->config_path(), std::ios::trunc) << cfg;
  auto r = run_cardiac({"check", "--config", agent->config_path()});
  // UNKNOWN here; CRITICAL on a machine with an NVIDIA GPU on its PCI bus (no driver for it).
  EXPECT_TRUE(r.exit_code == 3 || r.exit_code == 2) << r.out;
  EXPECT_TRUE(has(r.out, "NVML")) << r.out;
  EXPECT_FALSE(has(r.out, "CARDIAC OK")) << r.out;
  auto bad = run_cardiac({"check", "--timeout", "soon", "--config", agent->config_path()});
  EXPECT_EQ(bad.exit_code, 3) << bad.out;
  EXPECT_TRUE(has(bad.out, "CARDIAC UNKNOWN - cardiac check: --timeout")) << bad.out;
  // A flag the command does not know: UNKNOWN too, never 2 (CRITICAL in this convention).
  EXPECT_EQ(run_cardiac({"check", "--bogus"}).exit_code, 3);
  auto npd = run_cardiac({"npd", "--config", "/nonexistent/cardiac.toml"});
  EXPECT_EQ(npd.exit_code, 2) << npd.out;
}

TEST(CheckE2E, NpdConfigRunsTheCommandsItNames) {
  auto r = run_cardiac({"export", "npd-config", "--path", CARDIAC_BINARY, "--interval", "1m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plugin"], "custom");
  EXPECT_EQ(j["pluginConfig"]["invoke_interval"], "1m");
  ASSERT_EQ(j["rules"].size(), 2u);
  std::set<std::string> conditions;
  for (const auto& c : j["conditions"]) conditions.insert(c["type"].get<std::string>());
  // Each rule's command runs as written (plus a local sample of the fake NVML): a healthy node
  // is OK for the GPU condition, and the Xid condition is unknown without an agent.
  std::map<std::string, int> expected = {{"GPUUnhealthy", 0}, {"GPUXid", 2}};
  auto config = agent_on("healthy-8xh100.json");  // its configuration only: the host fixture
  for (const auto& rule : j["rules"]) {
    const std::string condition = rule["condition"];
    EXPECT_TRUE(conditions.count(condition));
    EXPECT_EQ(rule["path"], CARDIAC_BINARY);
    std::vector<std::string> args = rule["args"];
    args.insert(args.end(),
                {"--local", "--nvml-lib", FAKE_NVML_PATH, "--config", config->config_path()});
    auto run = run_cardiac(args, {scenario_env("healthy-8xh100.json")});
    EXPECT_EQ(run.exit_code, expected[condition]) << condition << ": " << run.out << run.err;
    EXPECT_LE(run.out.size(), 81u) << run.out;
  }
  auto bad = run_cardiac({"export", "npd-config", "--interval", "often"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(has(bad.err, "often")) << bad.err;
}

}  // namespace
}  // namespace cardiac::e2e
