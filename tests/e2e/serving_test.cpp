// SPDX-License-Identifier: Apache-2.0
// The serving view end to end: the fake NVML's process on GPU 0 grows 1 GiB a second, the
// agent projects its time to out-of-memory, and the default rules' alerts reach a webhook
// receiver on loopback; an inference engine's /metrics (a loopback server serving vLLM-shaped
// text) with its KV cache full, and one that cannot be read, become pending alerts.
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/webhook_receiver.h"

namespace cardiac::e2e {
namespace {

constexpr const char* kFullCache =
    R"(# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 48.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="meta-llama/Llama-3.1-8B-Instruct"} 17.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.987
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 112.0
)";

// A loopback HTTP server: the engine's /metrics beside the webhook receiver.
class Loopback : public WebhookReceiver {
 public:
  Loopback() {
    server().Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kFullCache, "text/plain; version=0.0.4");
    });
    start();
  }
};

std::string alert_state(const AgentProcess& agent, const std::string& rule) {
  auto all = nlohmann::json::parse(agent.get("/api/v1/alerts").second, nullptr, false);
  if (!all.is_array()) return "";
  for (const auto& a : all) {
    if (a.value("rule", "") == rule) return a.value("state", "");
  }
  return "";
}

TEST(ServingE2e, AGrowingProcessAndAFullKvCacheRaiseAlerts) {
  Loopback loop;
  auto s = scenario("healthy-8xh100.json");
  auto& proc = s["devices"][0]["processes"][0];
  ASSERT_TRUE(proc.contains("used_memory_bytes")) << proc.dump();
  proc["used_memory_growth_bytes_per_s"] = 1ULL << 30U;
  // The second engine URL answers 404: an engine that cannot be read.
  const std::string extra = "[serving]\nengines = [\"" + loop.url("/metrics") + "\", \"" +
                            loop.url("/not-metrics") +
                            "\"]\n"
                            "scrape_interval = \"200ms\"\nscrape_timeout = \"1s\"\n"
                            "vram_window = \"5s\"\nvram_step = \"200ms\"\n"
                            "vram_min_span = \"2s\"\nvram_min_growth_mib = 64\n"
                            "[[notifier]]\ntype = \"webhook\"\nurl = \"" +
                            loop.url("/hook") + "\"\n";
  AgentProcess agent(s.dump(), extra);
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());

  ASSERT_TRUE(eventually([&] {
    return !loop.received("gpu_process_vram_oom_imminent", "firing").empty();
  })) << agent.get("/api/v1/alerts").second;
  auto n = loop.received("gpu_process_vram_oom_imminent", "firing")[0];
  EXPECT_EQ(n["labels"]["severity"], "critical");
  EXPECT_EQ(n["labels"]["gpu"], "0");
  const std::string pid = s["devices"][0]["processes"][0]["pid"].dump();
  EXPECT_EQ(n["labels"]["pid"], pid);
  const std::string description = n["annotations"]["description"];
  EXPECT_NE(description.find("will run out of GPU memory"), std::string::npos) << description;
  EXPECT_FALSE(loop.received("gpu_process_vram_oom_soon", "firing").empty());

  // The engines: a full KV cache with requests waiting, and one that cannot be read.
  ASSERT_TRUE(eventually([&] { return alert_state(agent, "serving_kv_cache_full") == "pending"; }))
      << agent.get("/api/v1/alerts").second;
  ASSERT_TRUE(eventually([&] {
    return alert_state(agent, "serving_engine_unreadable") == "pending";
  })) << agent.get("/api/v1/alerts").second;
  EXPECT_EQ(agent.terminate(), 0);

  // The book the agent kept, beside its store, for the doctor.
  auto book = nlohmann::json::parse(read_text(agent.state_dir() + "/gpu-processes.json"));
  EXPECT_EQ(book["format"], "cardiac.gpu-processes/v1");
  bool found = false;
  for (const auto& p : book["processes"]) found |= p["pid"].dump() == pid && p["gpu"] == 0;
  EXPECT_TRUE(found) << book.dump();
}

std::string host_fixture() {
  return std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x";
}

// `cardiac doctor` on the healthy box with GPU 0 96 % used by pid 4242, whose command line is
// `cmdline` (NULs between arguments), and `config` as its configuration.
nlohmann::json doctor_on_full_gpu(const cardiac::testing::TempDir& tmp, const std::string& cmdline,
                                  const std::string& config) {
  namespace fs = std::filesystem;
  const fs::path host = fs::path(tmp.path()) / "host";
  fs::remove_all(host);
  fs::copy(host_fixture(), host, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(host / "proc" / "48213");
  std::ofstream(host / "proc" / "4242" / "cmdline", std::ios::trunc) << cmdline;
  auto s = scenario("healthy-8xh100.json");
  auto& gpu = s["devices"][0];
  const std::uint64_t total = gpu["memory_total"];
  gpu["memory_used"] = total / 100 * 96;
  gpu["memory_free"] = total - total / 100 * 96;
  gpu["processes"][0]["used_memory_bytes"] = total / 100 * 95;
  const std::string scenario_path = tmp.path() + "/scenario.json";
  std::ofstream(scenario_path, std::ios::trunc) << s.dump();
  const std::string config_path = tmp.path() + "/cardiac.toml";
  std::ofstream(config_path, std::ios::trunc) << config;
  auto r =
      run_cardiac({"doctor", "--json", "--config", config_path, "--nvml-lib", FAKE_NVML_PATH,
                   "--root", host.string(), "--window", "0", "--quiet", "--no-kmsg", "--no-probe"},
                  {{"CARDIAC_FAKE_NVML_SCENARIO", scenario_path}});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

const nlohmann::json* finding(const nlohmann::json& j, const std::string& id) {
  if (!j.contains("findings")) return nullptr;
  for (const auto& f : j["findings"]) {
    if (f["id"] == id) return &f;
  }
  return nullptr;
}

TEST(ServingE2e, DoctorTellsAPreallocatedKvCacheFromExhaustionAndReadsTheEngines) {
  Loopback loop;
  cardiac::testing::TempDir tmp;
  using namespace std::string_literals;
  const std::string config = "[serving]\nengines = [\"" + loop.url("/metrics") + "\", \"" +
                             loop.url("/not-metrics") + "\"]\n";
  auto vllm = doctor_on_full_gpu(
      tmp,
      "python3\0-m\0vllm.entrypoints.openai.api_server\0--gpu-memory-utilization\0"
      "0.95\0"s,
      config);
  const auto* pre = finding(vllm, "resources.vram_preallocated");
  ASSERT_NE(pre, nullptr) << vllm.dump(1);
  EXPECT_EQ((*pre)["severity"], "info");
  const std::string title = (*pre)["title"];
  EXPECT_NE(title.find("preallocated by vLLM (KV cache), not exhaustion"), std::string::npos)
      << title;
  EXPECT_EQ(finding(vllm, "resources.vram_full"), nullptr);
  // The engine at the loopback URL: KV cache 98.7 % with 17 requests waiting.
  const auto* kv = finding(vllm, "serving.kv_cache_full");
  ASSERT_NE(kv, nullptr) << vllm.dump(1);
  const std::string kv_title = (*kv)["title"];
  EXPECT_NE(kv_title.find("memory-bound"), std::string::npos) << kv_title;
  EXPECT_NE(finding(vllm, "serving.engine_unreachable"), nullptr) << vllm.dump(1);

  // The same full GPU under a training script is exhaustion.
  auto train = doctor_on_full_gpu(tmp, "python3\0train.py\0"s, "");
  EXPECT_NE(finding(train, "resources.vram_full"), nullptr) << train.dump(1);
  EXPECT_EQ(finding(train, "resources.vram_preallocated"), nullptr);
  EXPECT_EQ(finding(train, "serving.kv_cache_full"), nullptr);
}

}  // namespace
}  // namespace cardiac::e2e
