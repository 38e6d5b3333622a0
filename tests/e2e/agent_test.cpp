// SPDX-License-Identifier: Apache-2.0
// `cardiac agent` end to end on the fake NVML: /metrics and the API, a rule firing after its
// `for` and resolving below its clear threshold, the kernel log, kill -9 without losing
// committed data, a hung driver that does not stop the agent, and bad configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/tests/temp_dir.h"
#include "store/db.h"
#include "store/sealed.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

// A rule with a short `for`, so the test sees pending → firing → resolved in seconds.
const char* kThermalRule = R"(
[[rule]]
name = "test_gpu_hot"
metric = "gpu_temperature"
op = ">="
threshold = 85
clear = 80
for = "1s"
severity = "critical"
description = "GPU {gpu} at {value} °C"
)";

std::string exec_notifier(const std::string& file) {
  return "[[notifier]]\ntype = \"exec\"\nargv = [\"/usr/bin/tee\", \"-a\", \"" + file + "\"]\n";
}

TEST(Agent, ServesMetricsAndTheApi) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\nhost_interval = \"500ms\"\nmetrics_compat = \"dcgm\"\n");
  ASSERT_TRUE(agent.start());
  std::string metrics;
  // GPU and host samples come from separate threads on their own intervals: wait for both.
  ASSERT_TRUE(eventually([&] {
    metrics = agent.get("/metrics").second;
    return metrics.find("cardiac_gpu_temperature_celsius{gpu=\"7\"") != std::string::npos &&
           metrics.find("cardiac_host_memory_total_bytes") != std::string::npos;
  }));
  EXPECT_NE(metrics.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""), std::string::npos);
  EXPECT_NE(metrics.find("cardiac_agent_samples_total"), std::string::npos);
  EXPECT_NE(metrics.find("cardiac_host_memory_total_bytes"), std::string::npos);
  // NOT_SUPPORTED stays absent: H100 SXM boards have no fan.
  EXPECT_EQ(metrics.find("cardiac_gpu_fan_speed"), std::string::npos);
  auto status = nlohmann::json::parse(agent.get("/api/v1/status").second);
  EXPECT_EQ(status["gpus"].size(), 8u);
  EXPECT_TRUE(eventually([&] { return agent.get("/healthz").first == 200; }));
  EXPECT_EQ(agent.terminate(), 0);
}

// The NUL-separated environment a process was started with.
std::vector<std::string> environment_of(pid_t pid) {
  const std::string text = read_text("/proc/" + std::to_string(pid) + "/environ");
  std::vector<std::string> out;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\0', at);
    out.push_back(text.substr(at, end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

bool has_prefix(const std::vector<std::string>& env, std::string_view prefix) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.starts_with(prefix); });
}

// The agent runs with glibc's per-thread cache off (it re-executes itself with GLIBC_TUNABLES
// set), and what it starts gets the environment the agent was started with.
TEST(Agent, RunsWithItsAllocatorTunablesAndHandsOnTheCallersEnvironment) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) {
    GTEST_SKIP() << "GLIBC_TUNABLES is set for the tests: the agent would take it as it is";
  }
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  const auto own = environment_of(agent.pid());
  EXPECT_TRUE(std::find(own.begin(), own.end(), "GLIBC_TUNABLES=glibc.malloc.tcache_count=0") !=
              own.end());
  std::vector<pid_t> children;
  ASSERT_TRUE(eventually([&] {
    children.clear();
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(agent.pid()) + "/task")) {
      std::istringstream ids(read_text(task.path().string() + "/children"));
      for (pid_t c = 0; ids >> c;) children.push_back(c);
    }
    return !children.empty();
  }));
  for (pid_t c : children) {  // the NVML worker
    const auto env = environment_of(c);
    EXPECT_FALSE(has_prefix(env, "GLIBC_TUNABLES=")) << c;
    EXPECT_FALSE(has_prefix(env, "CARDIAC_CALLER_GLIBC_TUNABLES=")) << c;
    EXPECT_TRUE(has_prefix(env, "CARDIAC_FAKE_NVML_SCENARIO=")) << c;
  }
  EXPECT_EQ(agent.terminate(), 0);
}

TEST(Agent, RuleFiresAfterItsForAndResolvesBelowClear) {
  auto sc = scenario("thermal-throttle.json");
  sc.erase("timeline");  // the test decides when it cools down
  AgentProcess agent(sc.dump(), "");
  std::string rules = agent.dir() + "/rules.toml";
  std::ofstream(rules) << kThermalRule;
  std::string notes = agent.dir() + "/notes.json";
  // The notifier table must come before [agent]; rewrite the file in order.
  std::string cfg = read_text(agent.config_path());
  auto at = cfg.find("[agent]");
  cfg.insert(at, exec_notifier(notes));
  std::ofstream(agent.config_path(), std::ios::trunc) << cfg;
  agent.agent_keys("interval = \"200ms\"\nrules = \"" + rules + "\"\ndefault_rules = false\n");
  ASSERT_TRUE(agent.start());

  ASSERT_TRUE(eventually([&] { return read_text(notes).find("\"firing\"") != std::string::npos; }))
      << read_text(notes);
  auto firing = read_text(notes);
  EXPECT_NE(firing.find("\"alertname\":\"test_gpu_hot\""), std::string::npos) << firing;
  EXPECT_NE(firing.find("\"gpu\":\"1\""), std::string::npos);
  EXPECT_EQ(firing.find("\"gpu\":\"0\""), std::string::npos);  // GPU 0 is cool

  // Between clear (80) and threshold (85): stays firing (hysteresis).
  sc["devices"][1]["temperature"] = 83;
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(eventually([&] {
    return agent.get("/metrics").second.find("cardiac_gpu_temperature_celsius{gpu=\"1\"") !=
               std::string::npos &&
           agent.get("/api/v1/status").second.find("\"temperature\":83") != std::string::npos;
  }));
  auto alerts = nlohmann::json::parse(agent.get("/api/v1/alerts").second);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0]["state"], "firing");

  sc["devices"][1]["temperature"] = 70;
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(
      eventually([&] { return read_text(notes).find("\"resolved\"") != std::string::npos; }));
  EXPECT_EQ(agent.terminate(), 0);

  // The CLI reads the same history.
  RunResult alerts_cli =
      run_cardiac({"alerts", "--state-dir", agent.state_dir(), "--json", "list", "--all"});
  auto all = nlohmann::json::parse(alerts_cli.out);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["state"], "resolved");
}

TEST(Agent, KernelLogXidsBecomeEventsAndCounters) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  std::ofstream(agent.dir() + "/kern.log", std::ios::app)
      << "[  123.456789] NVRM: Xid (PCI:0000:2a:00): 79, pid=1234, name=python, GPU has fallen "
         "off the bus.\n";
  ASSERT_TRUE(eventually([&] {
    return agent.get("/metrics").second.find("cardiac_gpu_xid_errors_total{gpu=\"1\"") !=
           std::string::npos;
  }));
  auto events = nlohmann::json::parse(agent.get("/api/v1/events?since=1h").second);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0]["xid"], 79);
  EXPECT_EQ(events[0]["pci_bus_id"], "0000:2a:00.0");
}

// A [kmsg] source file that does not exist is said once, shown as cardiac_kmsg_up 0 and in
// the status, and the kernel-log fault counts are not claimed as 0; the file appearing later
// is followed from its first line.
TEST(Agent, MissingKernelLogFileIsReportedAndFollowedOnceItAppears) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\n");
  const std::string log_path = agent.dir() + "/kern.log";
  std::filesystem::remove(log_path);
  agent.capture_stderr();
  ASSERT_TRUE(agent.start());
  auto kmsg_up = [&] {
    auto m = agent.get("/metrics").second;
    auto p = m.find("\ncardiac_kmsg_up{");
    if (p == std::string::npos) return std::string("absent");
    p = m.find("} ", p);
    return m.substr(p + 2, m.find('\n', p) - p - 2);
  };
  ASSERT_TRUE(eventually([&] {
    return agent.get("/metrics").second.find("cardiac_gpu_temperature_celsius{gpu=\"7\"") !=
           std::string::npos;
  }));
  EXPECT_EQ(kmsg_up(), "0");
  EXPECT_EQ(agent.get("/metrics").second.find("cardiac_gpu_kernel_faults_total{"),
            std::string::npos);
  EXPECT_EQ(agent.get("/healthz").first, 200);
  auto status = nlohmann::json::parse(agent.get("/api/v1/status").second);
  EXPECT_EQ(status["kernel_log"]["source"], log_path) << status.dump();
  EXPECT_EQ(status["kernel_log"]["readable"], false) << status.dump();
  const std::string warning = "kernel log " + log_path + " cannot be read (no such file)";
  ASSERT_TRUE(eventually([&] {
    return read_text(agent.dir() + "/agent.stderr").find(warning) != std::string::npos;
  })) << read_text(agent.dir() + "/agent.stderr");

  std::ofstream(log_path) << "[  123.456789] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', "
                             "name=<unknown>, GPU has fallen off the bus.\n";
  ASSERT_TRUE(eventually([&] { return kmsg_up() == "1"; })) << kmsg_up();
  ASSERT_TRUE(eventually([&] {
    return agent.get("/metrics").second.find("cardiac_gpu_kernel_faults_total{gpu=\"0\"") !=
           std::string::npos;
  })) << agent.get("/metrics").second;
  ASSERT_TRUE(eventually([&] {
    return agent.get("/metrics").second.find("cardiac_gpu_xid_errors_total{gpu=\"1\"") !=
           std::string::npos;
  })) << agent.get("/metrics").second;
  status = nlohmann::json::parse(agent.get("/api/v1/status").second);
  EXPECT_EQ(status["kernel_log"]["readable"], true) << status.dump();
  // One warning, not one per retry (the recovery is an info line, below the default level).
  const std::string logged = read_text(agent.dir() + "/agent.stderr");
  EXPECT_EQ(logged.find(warning), logged.rfind(warning)) << logged;
  EXPECT_EQ(agent.terminate(), 0);
}

TEST(Agent, NvmlXidEventsAreCountedOnceWithTheKernelLog) {
  AgentProcess agent(scenario("ecc-dbe.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  auto xid48 = [&] {
    auto m = agent.get("/metrics").second;
    auto at = m.find("xid=\"48\"} ");
    return at == std::string::npos ? std::string() : m.substr(at + 10, m.find('\n', at) - at - 10);
  };
  ASSERT_TRUE(eventually([&] { return xid48() == "1"; })) << agent.get("/metrics").second;
  // The kernel logs the same Xid moments later: still one occurrence.
  std::ofstream(agent.dir() + "/kern.log", std::ios::app)
      << "NVRM: Xid (PCI:0000:3a:00): 48, pid=4244, name=python3, An uncorrectable double bit "
         "error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition "
         "0.\n";
  ASSERT_TRUE(eventually([&] {
    auto events =
        nlohmann::json::parse(agent.get("/api/v1/events?since=1h").second, nullptr, false);
    return events.is_array() && events.size() >= 2;  // xid 48 and 63 from NVML
  }));
  // Give the kernel-log line time to be read: the sample counter moving past it proves it was.
  auto samples = [&] {
    auto m = agent.get("/metrics").second;
    auto at = m.find("\ncardiac_agent_samples_total{");
    if (at == std::string::npos) return 0L;
    return std::stol(m.substr(m.find("} ", at) + 2));
  };
  long seen = samples();
  ASSERT_TRUE(eventually([&] { return samples() > seen + 3; }));
  EXPECT_EQ(xid48(), "1");
  auto events = nlohmann::json::parse(agent.get("/api/v1/events?since=1h").second);
  int count48 = 0;
  for (const auto& e : events) count48 += e.value("xid", 0) == 48;
  EXPECT_EQ(count48, 1) << events.dump(1);
}

TEST(Agent, KillNineLosesNothingCommitted) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"100ms\"\n");
  std::string cfg = read_text(agent.config_path());
  cfg.insert(cfg.find("[agent]"), "[store]\nflush_interval = \"200ms\"\n");
  std::ofstream(agent.config_path(), std::ios::trunc) << cfg;
  ASSERT_TRUE(agent.start());
  std::string db_path = agent.state_dir() + "/cardiac.db";
  auto count = [&] {
    auto db = store::Db::open(db_path);
    if (!db) return std::int64_t{-1};
    auto n = store::count_raw_samples(*db);
    return n ? *n : std::int64_t{-1};
  };
  ASSERT_TRUE(eventually([&] { return count() > 2000; }));
  agent.kill9();  // in the middle of sampling and batched writes
  std::int64_t committed = count();
  ASSERT_GT(committed, 0);
  {
    auto db = store::Db::open(db_path);
    ASSERT_TRUE(db);
    auto check = db->query_text("PRAGMA integrity_check");
    ASSERT_TRUE(check && *check);
    EXPECT_EQ(**check, "ok");
  }
  ASSERT_TRUE(agent.start());
  ASSERT_TRUE(eventually([&] { return count() > committed; }));
  EXPECT_EQ(agent.terminate(), 0);
}

TEST(Agent, HungDriverDoesNotStopTheAgent) {
  AgentProcess agent(scenario("hang.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\nhost_interval = \"500ms\"\n");
  ASSERT_TRUE(agent.start());
  std::string metrics;
  ASSERT_TRUE(eventually([&] {
    metrics = agent.get("/metrics").second;
    return metrics.find("cardiac_gpu_up{gpu=\"3\"") != std::string::npos;
  }));
  EXPECT_NE(metrics.find("cardiac_gpu_up{gpu=\"3\""), std::string::npos);
  EXPECT_NE(metrics.find("cardiac_host_memory_total_bytes"), std::string::npos);
  // Sampling goes on for the other GPUs: the sample counter keeps rising.
  auto samples = [&] {
    auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
    return j.is_object() && j.contains("gpus") && j["gpus"].size() == 8 &&
           j["gpus"][3]["health"] == "unresponsive" && j["gpus"][4]["health"] == "ok";
  };
  EXPECT_TRUE(eventually(samples));
  EXPECT_EQ(agent.get("/healthz").first, 200);
}

TEST(Agent, BadConfigurationAndStateAreClearErrors) {
  cardiac::testing::TempDir tmp;
  std::string bad = tmp.file("bad.toml");
  std::ofstream(bad) << "[agent]\nintreval = \"1s\"\n";
  RunResult r = run_cardiac({"agent", "--config", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad + ":2:1: unknown key 'agent.intreval'"), std::string::npos) << r.err;

  std::ofstream(bad, std::ios::trunc) << "[agent]\nstate_dir = \"/dev/null/state\"\n";
  RunResult st = run_cardiac({"agent", "--config", bad});
  EXPECT_NE(st.exit_code, 0);
  EXPECT_NE(st.err.find("/dev/null/state"), std::string::npos) << st.err;

  char tmpl[] = "/tmp/cardiac-corrupt-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/cardiac.db") << std::string(8192, 'x');
  std::ofstream(bad, std::ios::trunc)
      << "[agent]\nstate_dir = \"" << dir << "\"\nlisten = \"127.0.0.1:" << free_port() << "\"\n";
  RunResult corrupt = run_cardiac({"agent", "--config", bad});
  EXPECT_NE(corrupt.exit_code, 0);
  EXPECT_NE(corrupt.err.find(dir + "/cardiac.db"), std::string::npos) << corrupt.err;
  // The corrupt file is left as it was for a person to inspect.
  EXPECT_EQ(read_text(dir + "/cardiac.db"), std::string(8192, 'x'));
  std::filesystem::remove_all(dir);
}

TEST(Agent, HelpAndBadFlagsReadCleanly) {
  RunResult help = run_cardiac({"agent", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  // Not CLI11's `TEXT:{dcgm,}`, whose empty choice reads as a typo.
  EXPECT_NE(help.out.find("--metrics-compat dcgm"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("{dcgm,}"), std::string::npos) << help.out;
  RunResult other = run_cardiac({"agent", "--metrics-compat", "prometheus"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("--metrics-compat"), std::string::npos) << other.err;

  // 0 is a duration; it is the value that is wrong.
  RunResult zero = run_cardiac({"agent", "--interval", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--interval '0': the sampling interval must be positive"),
            std::string::npos)
      << zero.err;
  RunResult word = run_cardiac({"agent", "--interval", "often"});
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.err.find("--interval: not a duration: 'often'"), std::string::npos) << word.err;
}

TEST(Agent, PrintsItsDefaultConfiguration) {
  RunResult r = run_cardiac({"agent", "--print-default-config"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("listen = \"127.0.0.1:9847\""), std::string::npos);
}

}  // namespace
}  // namespace cardiac::e2e

namespace cardiac::e2e {
namespace {

TEST(Agent, GpuFaultsBecomeIncidentsThatEndWhenTheGpuRecovers) {
  auto sc = scenario("healthy-8xh100.json");
  AgentProcess agent(sc.dump(), "");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  // /healthz answers before the first sample; the GPU is lost after the agent has seen it.
  ASSERT_TRUE(eventually([&] {
    auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
    return j.is_object() && j.contains("gpus") && j["gpus"].size() == 8;
  }));
  sc["devices"][5]["state"] = "lost";
  agent.write_scenario(sc.dump());
  auto incidents = [&] {
    auto r = run_cardiac({"incidents", "--json", "--state-dir", agent.state_dir()});
    return nlohmann::json::parse(r.out, nullptr, false);
  };
  ASSERT_TRUE(eventually([&] {
    auto j = incidents();
    return j.is_array() && j.size() == 1;
  })) << run_cardiac({"incidents", "--json", "--state-dir", agent.state_dir()}).out
      << agent.get("/api/v1/status").second;
  auto open = incidents()[0];
  EXPECT_EQ(open["gpu"], 5);
  EXPECT_EQ(open["kind"], "lost");
  EXPECT_TRUE(open["ended"].is_null());
  // A lost GPU is fenced, and a fenced incident ends only when its fence is cleared: the card
  // answering again is not yet a return to service.
  auto fenced = [&] {
    auto r = run_cardiac({"incident", "list", "--json", "--state-dir", agent.state_dir()});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_array() && j.size() == 1 && !j[0]["fenced"].is_null();
  };
  ASSERT_TRUE(eventually(fenced)) << incidents().dump();
  sc["devices"][5].erase("state");
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(eventually([&] {
    auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
    return j.is_object() && j.contains("gpus") && j["gpus"].size() == 8 &&
           j["gpus"][5].value("health", "") == "ok";
  })) << agent.get("/api/v1/status").second;
  auto still = incidents();
  ASSERT_EQ(still.size(), 1U);
  EXPECT_TRUE(still[0]["ended"].is_null()) << still.dump();
  // A person clears the fence: the incident ends, its return to service recorded.
  auto clear = run_cardiac({"fence", "clear", "5"}, {{"CARDIAC_STATE_DIR", agent.state_dir()}});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  ASSERT_TRUE(eventually([&] {
    auto j = incidents();
    return j.is_array() && j.size() == 1 && !j[0]["ended"].is_null();
  })) << incidents().dump();
}

TEST(Agent, RecoversWhenTheDriverStopsHanging) {
  auto sc = scenario("hang.json");
  AgentProcess agent(sc.dump(), "");
  std::string cfg = read_text(agent.config_path());
  cfg.replace(cfg.find("timeout = \"1s\""), 14, "timeout = \"300ms\"\nretry = \"1s\"");
  std::ofstream(agent.config_path(), std::ios::trunc) << cfg;
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());
  auto health3 = [&] {
    auto j = nlohmann::json::parse(agent.get("/api/v1/status").second, nullptr, false);
    return j.is_object() && j.contains("gpus") && j["gpus"].size() == 8
               ? j["gpus"][3]["health"].get<std::string>()
               : std::string();
  };
  ASSERT_TRUE(eventually([&] { return health3() == "unresponsive"; }));
  sc.erase("hangs");
  agent.write_scenario(sc.dump());
  EXPECT_TRUE(eventually([&] { return health3() == "ok"; }));
}

TEST(Agent, HealthzFailsWhenSamplingStalls) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  // Samples 10 s apart but stale after 50 ms (+ the 1 s NVML timeout): between two samples the
  // agent looks exactly like one whose sampling thread is stuck. The NVML timeout stays at its
  // 1 s: a shorter one can expire in a slow (sanitizer) build's worker start, which is a
  // different 503. Waits for the stalled one, not for any 503.
  agent.agent_keys("interval = \"10s\"\nstale_after = \"50ms\"\n");
  ASSERT_TRUE(agent.start());
  std::pair<int, std::string> r;
  ASSERT_TRUE(eventually([&] {
    r = agent.get("/healthz");
    return r.first == 503 && r.second.find("sampling stalled") != std::string::npos;
  })) << r.first
      << " " << r.second;
  EXPECT_NE(r.second.find("sampling stalled"), std::string::npos) << r.second;
}

TEST(Agent, ExpectedGpuCountIsChecked) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.agent_keys("interval = \"200ms\"\nexpected_gpus = 8\n");
  ASSERT_TRUE(agent.start());
  EXPECT_EQ(agent.get("/healthz").first, 200);
}

}  // namespace
}  // namespace cardiac::e2e
