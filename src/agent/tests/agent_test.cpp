// SPDX-License-Identifier: Apache-2.0
// The whole agent in one process: scripted GPUs, MemFs, a ManualClock, a real SQLite store and
// the real HTTP server on loopback. Time passes only when the test advances the clock.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/tests/support.h"
#include "store/incidents.h"

namespace cardiac::agent {
namespace {

using testing::GpuScript;
using testing::in_process_options;
using testing::TempDir;

constexpr std::string_view kHotRule = R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">"
threshold = 80
for = "1m"
severity = "critical"
description = "GPU {gpu} at {value} C"
)";

struct InProcessAgent {
  TempDir dir;
  ManualClock clock;
  std::shared_ptr<GpuScript> gpus = std::make_shared<GpuScript>();
  std::string notified = dir.path() + "/notified.jsonl";
  std::unique_ptr<Agent> agent;
  std::unique_ptr<httplib::Client> http;

  explicit InProcessAgent(bool with_rule = true) {
    AgentOptions o = in_process_options(dir, gpus);
    if (with_rule) {
      o.config.agent.default_rules = false;
      o.config.agent.rules_file = dir.write("rules.toml", std::string(kHotRule));
    }
    config::NotifierSettings exec;
    exec.type = "exec";
    exec.argv = {"/bin/sh", "-c", "cat >> \"$0\"; echo >> \"$0\"", notified};
    o.config.notifiers.push_back(exec);
    agent = std::make_unique<Agent>(std::move(o), clock);
    auto started = agent->start();
    if (!started) ADD_FAILURE() << started.error().what();
    http = std::make_unique<httplib::Client>("127.0.0.1", agent->port());
  }

  nlohmann::json alerts() {
    auto r = http->Get("/api/v1/alerts");
    if (!r || r->status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(r->body);
  }
  std::string alert_state(const std::string& rule) {
    for (const auto& a : alerts()) {
      if (a.value("rule", "") == rule) return a.value("state", "");
    }
    return "";
  }
  std::pair<int, std::string> healthz() {
    auto r = http->Get("/healthz");
    if (!r) return {0, ""};
    return {r->status, r->body};
  }
};

// Delivery is asynchronous (the dispatcher's thread runs the hook): poll for the file's
// content, bounded; nothing here waits for time to pass.
std::string wait_for_notification(const std::string& path, const std::string& needle) {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
    if (text.find(needle) != std::string::npos) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return text;
}

TEST(InProcessAgent, RuleForElapsesOnTheManualClockAndTheNotifierHearsOfIt) {
  InProcessAgent a;
  a.gpus->temperature = 90;
  a.agent->sample_now();
  EXPECT_EQ(a.alert_state("hot"), "pending");
  a.clock.advance(30 * kNsPerSec);
  a.agent->sample_now();
  EXPECT_EQ(a.alert_state("hot"), "pending") << "30 s of a 1 m `for` have passed";
  a.clock.advance(31 * kNsPerSec);
  a.agent->sample_now();
  EXPECT_EQ(a.alert_state("hot"), "firing");
  std::string sent = wait_for_notification(a.notified, "\"firing\"");
  EXPECT_NE(sent.find("hot"), std::string::npos) << sent;

  a.gpus->temperature = 50;
  a.clock.advance(kNsPerSec);
  a.agent->sample_now();
  EXPECT_EQ(a.alert_state("hot"), "");  // resolved: no longer open
  sent = wait_for_notification(a.notified, "\"resolved\"");
  EXPECT_NE(sent.find("resolved"), std::string::npos) << sent;
}

TEST(InProcessAgent, HealthzIsServedDuringTheStartGraceThenSaysNoSampleCame) {
  InProcessAgent a;
  EXPECT_EQ(a.healthz().first, 200);
  // Default staleness: max(5 × 1 s, 5 s) plus the 5 s NVML deadline.
  a.clock.advance(11 * kNsPerSec);
  auto [status, body] = a.healthz();
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("no GPU sample yet"), std::string::npos) << body;
}

TEST(InProcessAgent, AStalledSamplerMakesHealthz503) {
  InProcessAgent a;
  a.agent->sample_now();
  EXPECT_EQ(a.healthz().first, 200);
  a.clock.advance(9 * kNsPerSec);
  EXPECT_EQ(a.healthz().first, 200) << "within the staleness allowance";
  a.clock.advance(2 * kNsPerSec);
  auto [status, body] = a.healthz();
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("sampling stalled"), std::string::npos) << body;
  a.agent->sample_now();
  EXPECT_EQ(a.healthz().first, 200) << "a sample again: healthy again";
}

TEST(InProcessAgent, UnusableNvmlIs503WithTheReasonAndAnAlert) {
  InProcessAgent a(/*with_rule=*/false);  // the default rules, nvml_unavailable among them
  a.gpus->available = false;
  a.agent->sample_now();
  auto [status, body] = a.healthz();
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("driver_not_loaded"), std::string::npos) << body;
  // The default rule has a `for`; let it elapse on the clock.
  for (int i = 0; i < 6; ++i) {
    a.clock.advance(30 * kNsPerSec);
    a.agent->sample_now();
  }
  EXPECT_EQ(a.alert_state("nvml_unavailable"), "firing");
}

TEST(InProcessAgent, AFaultyGpuOpensAnIncidentThatClosesWhenItRecovers) {
  InProcessAgent a;
  a.gpus->health = nvml::DeviceHealth::kLost;
  a.agent->sample_now();
  a.clock.advance(5 * kNsPerSec);
  a.gpus->health = nvml::DeviceHealth::kOk;
  a.agent->sample_now();
  a.agent->stop();
  auto db = store::Db::open(a.dir.path() + "/state/cardiac.db");
  ASSERT_TRUE(db) << db.error().what();
  auto incidents = store::incidents_since(*db, 0);
  ASSERT_TRUE(incidents) << incidents.error().what();
  ASSERT_EQ(incidents->size(), 1u);
  EXPECT_EQ(incidents->front().gpu, 0u);
  ASSERT_TRUE(incidents->front().ended_ns);
  EXPECT_EQ(*incidents->front().ended_ns - incidents->front().started_ns, 5 * kNsPerSec);
}

TEST(InProcessAgent, MetricsCountSamplesTakenOnTheCallersThread) {
  InProcessAgent a;
  a.agent->sample_now();
  a.agent->sample_now();
  auto r = a.http->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("cardiac_agent_samples_total{hostname=\"testhost\"} 2"), std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("cardiac_gpu_temperature_celsius"), std::string::npos);
}

// The agent's own memory, as of the latest sample: its allocator's live blocks hold SQLite's
// (the store is open), and neither is 0. Under a sanitizer's allocator mallinfo2 says nothing,
// and the heap series are absent rather than 0.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(InProcessAgent, MetricsShowTheAgentsOwnMemory) {
  InProcessAgent a;
  a.agent->sample_now();
  auto r = a.http->Get("/metrics");
  ASSERT_TRUE(r);
  auto value = [&](const std::string& name) -> double {
    const std::string head = "\n" + name + "{hostname=\"testhost\"} ";
    const auto at = r->body.find(head);
    if (at == std::string::npos) return -1;
    return std::stod(r->body.substr(at + head.size()));
  };
  const double in_use = value("cardiac_agent_heap_in_use_bytes");
  const double sqlite = value("cardiac_agent_sqlite_memory_bytes");
  EXPECT_GT(sqlite, 0) << r->body;
  if (in_use != -1 || !kSanitized) {
    EXPECT_GE(in_use, sqlite);
    EXPECT_GE(value("cardiac_agent_heap_free_bytes"), 0);
  }
  // A second scrape of the same sample is the same text: the values are the sample's.
  auto again = a.http->Get("/metrics");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, r->body);
}

// The serving view live: a process whose memory grows 1 GiB a second raises the default
// time-to-OOM alerts (warning and critical) and the notifier hears of them; the per-process
// book is saved beside the store at stop.
TEST(InProcessAgent, AGrowingProcessRaisesTheTimeToOomAlerts) {
  TempDir dir;
  ManualClock clock;
  auto gpus = std::make_shared<GpuScript>();
  AgentOptions o = in_process_options(dir, gpus);
  o.config.serving.vram_step = kNsPerSec;
  o.config.serving.vram_min_span = 5 * kNsPerSec;
  o.config.serving.vram_window = 8 * kNsPerSec;  // the flat start leaves the window
  o.config.serving.vram_min_growth_mib = 1;
  const std::string notified = dir.path() + "/notified.jsonl";
  config::NotifierSettings exec;
  exec.type = "exec";
  exec.argv = {"/bin/sh", "-c", "cat >> \"$0\"; echo >> \"$0\"", notified};
  o.config.notifiers.push_back(exec);
  auto agent = std::make_unique<Agent>(std::move(o), clock);
  ASSERT_TRUE(agent->start());
  httplib::Client http("127.0.0.1", agent->port());
  auto state = [&](const std::string& rule) {
    auto r = http.Get("/api/v1/alerts");
    if (!r || r->status != 200) return std::string();
    for (const auto& a : nlohmann::json::parse(r->body)) {
      if (a.value("rule", "") == rule) return a.value("state", "");
    }
    return std::string();
  };
  // Flat at 40 GiB for 10 s: nothing.
  gpus->process_memory = 40ULL << 30U;
  for (int i = 0; i < 10; ++i) {
    agent->sample_now();
    clock.advance(kNsPerSec);
  }
  EXPECT_EQ(state("gpu_process_vram_oom_soon"), "");
  // Then 1 GiB a second.
  for (int i = 1; i <= 8; ++i) {
    gpus->process_memory = (40ULL + static_cast<std::uint64_t>(i)) << 30U;
    agent->sample_now();
    clock.advance(kNsPerSec);
  }
  EXPECT_EQ(state("gpu_process_vram_oom_imminent"), "firing");
  EXPECT_EQ(state("gpu_process_vram_oom_soon"), "firing");
  std::string sent = wait_for_notification(notified, "gpu_process_vram_oom_imminent");
  EXPECT_NE(sent.find("process 4242 (python3)"), std::string::npos) << sent;
  agent.reset();
  std::ifstream book(dir.path() + "/state/gpu-processes.json");
  ASSERT_TRUE(book.good());
  auto j = nlohmann::json::parse(book);
  ASSERT_EQ(j["processes"].size(), 1U);
  EXPECT_EQ(j["processes"][0]["pid"], 4242);
  EXPECT_TRUE(j["processes"][0].contains("seconds_to_oom"));
}

}  // namespace
}  // namespace cardiac::agent
