// SPDX-License-Identifier: Apache-2.0
// A miner on a GPU reaches a person: a real process, named like a miner and pointed at a mining
// pool on its command line, runs from a temporary directory while the fake NVML lists it on a
// busy GPU 0; the agent's security watch finds it, the default `security_gpu_cryptojacking` rule
// fires critical and the webhook notifier delivers it to a receiver on loopback. When the miner
// is gone the alert resolves.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "platform/subprocess.h"
#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/webhook_receiver.h"

namespace cardiac::e2e {
namespace {

TEST(SecurityWatchE2e, AMinerOnAGpuPagesThroughTheWebhook) {
  testing::TempDir dir;
  const std::string miner = dir.file("xmrig");
  std::filesystem::copy_file("/bin/sleep", miner);
  ::chmod(miner.c_str(), 0755);
  // `exec -a` gives the process the command line a miner has; it only sleeps.
  SpawnOptions o;
  o.argv = {"/bin/bash", "-c",
            "exec -a 'xmrig --url stratum+tcp://pool.example.net:3333 --cuda' " + miner + " 600"};
  o.pipe_stdin = false;
  o.pipe_stdout = false;
  auto child = Child::spawn(o);
  ASSERT_TRUE(child) << child.error().what();
  // The exec has happened once /proc shows the miner's command line.
  ASSERT_TRUE(eventually([&] {
    return read_text("/proc/" + std::to_string(child->pid()) + "/cmdline").find("stratum+tcp") !=
           std::string::npos;
  }));

  auto sc = scenario("healthy-8xh100.json");
  sc["devices"][0]["utilization_gpu"] = 100;
  sc["devices"][0]["processes"] = nlohmann::json::array(
      {{{"pid", child->pid()}, {"used_memory_bytes", 2147483648LL}, {"type", "compute"}}});
  WebhookReceiver hook;
  hook.start();
  AgentProcess agent(sc.dump(), hook.notifier() + "[security]\nwatch_interval = \"2s\"\n");
  agent.agent_keys("interval = \"200ms\"\n");
  ASSERT_TRUE(agent.start());

  ASSERT_TRUE(eventually([&] {
    return !hook.received("security_gpu_cryptojacking", "firing").empty();
  })) << agent.get("/api/v1/alerts").second;
  auto a = hook.received("security_gpu_cryptojacking", "firing")[0];
  EXPECT_EQ(a["labels"].value("severity", ""), "critical") << a.dump();
  EXPECT_EQ(a["labels"].value("finding", ""), "security.gpu_cryptojacking") << a.dump();
  const std::string summary = a["labels"].value("summary", "");
  EXPECT_NE(summary.find("pid " + std::to_string(child->pid())), std::string::npos) << a.dump();
  EXPECT_NE(summary.find("mining"), std::string::npos) << a.dump();
  EXPECT_NE(a["labels"].value("runbook", "").find("security.gpu_cryptojacking.md"),
            std::string::npos)
      << a.dump();
  // The executable in /tmp is a sign of its own, a warning.
  ASSERT_TRUE(eventually([&] {
    return !hook.received("security_tmp_executable", "firing").empty();
  })) << agent.get("/api/v1/alerts").second;
  EXPECT_EQ(hook.received("security_tmp_executable", "firing")[0]["labels"].value("severity", ""),
            "warning");

  // The miner stopped and gone from the GPU: the alert resolves.
  child->signal(SIGKILL);
  child->wait();
  sc["devices"][0]["processes"] = nlohmann::json::array();
  agent.write_scenario(sc.dump());
  ASSERT_TRUE(eventually([&] {
    return !hook.received("security_gpu_cryptojacking", "resolved").empty();
  })) << agent.get("/api/v1/alerts").second;
}

}  // namespace
}  // namespace cardiac::e2e
