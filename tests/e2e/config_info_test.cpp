// SPDX-License-Identifier: Apache-2.0
// The agent's configuration info metrics end to end: the facts of its host tree on /metrics
// (checked with promtool), read once and not per scrape, and read again on SIGHUP.
#include <gtest/gtest.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

namespace fs = std::filesystem;

std::pair<int, std::string> promtool(const std::string& text) {
  // NOLINTNEXTLINE(bugprone-command-processor): the shell's PATH lookup is the question.
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return {-1, ""};
  const std::string path = "/tmp/cardiac-config-info-" + std::to_string(::getpid()) + ".prom";
  std::ofstream(path) << text;
  std::string out;
  // The shell feeds promtool the file and captures both streams; the path is the test's own.
  // NOLINTNEXTLINE(bugprone-command-processor)
  FILE* p = ::popen(("promtool check metrics < '" + path + "' 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = ::pclose(p);
  fs::remove(path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The line of `family` in `metrics` (the first one), or "".
std::string line_of(const std::string& metrics, const std::string& family) {
  const std::size_t at = metrics.find("\n" + family + "{");
  if (at == std::string::npos) return "";
  return metrics.substr(at + 1, metrics.find('\n', at + 1) - at - 1);
}

TEST(ConfigInfo, TheNodesFactsOnMetricsReadAgainOnReload) {
  // A copy of the captured host, so that the test can upgrade its driver.
  const std::string root = "/tmp/cardiac-config-info-root-" + std::to_string(::getpid());
  fs::remove_all(root);
  fs::copy(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x", root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  AgentProcess agent(
      read_text(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/healthy-8xh100.json"),
      "[host]\nroot = \"" + root + "\"\n");
  agent.agent_keys("interval = \"200ms\"\nhost_interval = \"500ms\"\n");
  ASSERT_TRUE(agent.start());
  std::string metrics;
  ASSERT_TRUE(eventually([&] {
    metrics = agent.get("/metrics").second;
    return metrics.find("\ncardiac_gpu_config_info{") != std::string::npos;
  })) << metrics;
  const std::string node = line_of(metrics, "cardiac_node_config_info");
  EXPECT_NE(node.find("driver=\"550.54.15\""), std::string::npos) << node;
  EXPECT_NE(node.find("kernel=\"6.18.44-fc-v1045\",os=\"debian 12\",nccl=\"2.21.5\""),
            std::string::npos)
      << node;
  EXPECT_NE(node.find("iommu=\"intel_iommu=on iommu=pt\""), std::string::npos) << node;
  EXPECT_TRUE(node.ends_with("} 1")) << node;
  const std::string gpu = line_of(metrics, "cardiac_gpu_config_info");
  EXPECT_TRUE(gpu.starts_with("cardiac_gpu_config_info{gpu=\"0\",uuid=\"GPU-")) << gpu;
  EXPECT_NE(gpu.find("pcie=\"gen5x16\""), std::string::npos) << gpu;

  auto [rc, out] = promtool(metrics);
  if (rc != -1) {
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "");
  }

  // The driver is upgraded under the running agent: later scrapes keep the facts read at start…
  std::ofstream(root + "/proc/driver/nvidia/version", std::ios::trunc)
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  560.35.03  Fri Aug 16 21:39:15 UTC "
         "2024\n";
  ASSERT_TRUE(eventually([&] {
    const std::string again = agent.get("/metrics").second;
    return again.find("cardiac_agent_samples_total") != std::string::npos && again != metrics;
  }));
  EXPECT_NE(line_of(agent.get("/metrics").second, "cardiac_node_config_info").find("550.54.15"),
            std::string::npos);
  // …until a reload reads them again.
  agent.signal(SIGHUP);
  EXPECT_TRUE(eventually([&] {
    return line_of(agent.get("/metrics").second, "cardiac_node_config_info")
               .find("driver=\"560.35.03\"") != std::string::npos;
  })) << line_of(agent.get("/metrics").second, "cardiac_node_config_info");
  fs::remove_all(root);
}

}  // namespace
}  // namespace cardiac::e2e
