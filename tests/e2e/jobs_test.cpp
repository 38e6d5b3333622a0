// SPDX-License-Identifier: Apache-2.0
// GPU processes mapped to jobs end to end: the fake NVML lists processes, a host tree gives
// their cgroups and environments (Slurm v2 and v1 cgroups, a cardiac queue job's
// CARDIAC_JOB_ID, a process of no job); the agent's /metrics carries cardiac_gpu_job_info
// (checked with promtool), `cardiac status --json` names each process's job, and the doctor's
// finding about a throttling GPU names the job running on it.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

const std::string kSlurmHost = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/slurm-node-2numa";

// `promtool check metrics` over `text`: its exit code and output, or -1 when promtool is not
// installed (then the caller skips that check).
std::pair<int, std::string> promtool_check(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return {-1, ""};
  testing::TempDir dir;
  const std::string path = dir.write("metrics.prom", text);
  std::string out;
  FILE* p = ::popen(("promtool check metrics < '" + path + "' 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(GpuJobs, MetricsCarryTheJobOfEachGpu) {
  AgentProcess agent(
      read_text(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/dgx1-v100-slurm.json"),
      "[host]\nroot = \"" + kSlurmHost + "\"\n");
  agent.agent_keys("interval = \"200ms\"\nhost_interval = \"500ms\"\n");
  ASSERT_TRUE(agent.start());
  std::string metrics;
  ASSERT_TRUE(eventually([&] {
    metrics = agent.get("/metrics").second;
    return metrics.find("cardiac_gpu_job_info{") != std::string::npos;
  })) << metrics;
  // Every series of the family, by GPU: Slurm's job 123 on GPUs 0 and 1 (cgroup v2), 456 on
  // GPU 4 (cgroup v1), the cardiac queue's job 7 on GPU 6; GPU 7's process is no job's.
  std::map<std::string, std::string> by_gpu;
  std::size_t at = 0;
  while ((at = metrics.find("\ncardiac_gpu_job_info{", at)) != std::string::npos) {
    const std::size_t end = metrics.find('\n', at + 1);
    const std::string line = metrics.substr(at + 1, end - at - 1);
    const std::size_t g = line.find("gpu=\"") + 5;
    by_gpu[line.substr(g, line.find('"', g) - g)] = line;
    at = end;
  }
  ASSERT_EQ(by_gpu.size(), 4u) << metrics;
  EXPECT_NE(by_gpu["0"].find("job=\"123\",source=\"slurm\"} 1"), std::string::npos) << by_gpu["0"];
  EXPECT_NE(by_gpu["1"].find("job=\"123\",source=\"slurm\"} 1"), std::string::npos) << by_gpu["1"];
  EXPECT_NE(by_gpu["4"].find("job=\"456\",source=\"slurm\"} 1"), std::string::npos) << by_gpu["4"];
  EXPECT_NE(by_gpu["6"].find("job=\"7\",source=\"cardiac\"} 1"), std::string::npos) << by_gpu["6"];
  EXPECT_NE(by_gpu["4"].find("uuid=\"GPU-5e1a0c04-"), std::string::npos) << by_gpu["4"];

  auto [rc, out] = promtool_check(metrics);
  if (rc == -1) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "");
}

TEST(GpuJobs, StatusJsonNamesEachProcesssJob) {
  RunResult r = run_cardiac({"status", "--json", "--nvml-lib", FAKE_NVML_PATH, "--root", kSlurmHost,
                             "--config", "/dev/null"},
                            {scenario_env("dgx1-v100-slurm.json")});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  const auto& p0 = j["gpus"][0]["processes"][0];
  EXPECT_EQ(p0["pid"], 5101) << p0;
  EXPECT_EQ(p0["job"], "123");
  EXPECT_EQ(p0["job_source"], "slurm");
  EXPECT_EQ(p0["job_from"], "cgroup");
  const auto& p6 = j["gpus"][6]["processes"][0];
  EXPECT_EQ(p6["job"], "7") << p6;
  EXPECT_EQ(p6["job_source"], "cardiac");
  EXPECT_EQ(p6["job_from"], "environ");
  const auto& p7 = j["gpus"][7]["processes"][0];
  EXPECT_EQ(p7["name"], "jupyter-lab") << p7;
  EXPECT_FALSE(p7.contains("job")) << p7;

  RunResult text = run_cardiac({"status", "--nvml-lib", FAKE_NVML_PATH, "--root", kSlurmHost,
                                "--config", "/dev/null", "--color", "never"},
                               {scenario_env("dgx1-v100-slurm.json")});
  EXPECT_NE(text.out.find("GPU MEMORY  JOB\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  slurm 456\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  cardiac 7\n"), std::string::npos) << text.out;
}

TEST(GpuJobs, DoctorFindingNamesTheJobOnItsGpu) {
  RunResult r = run_cardiac({"doctor", "--json", "--nvml-lib", FAKE_NVML_PATH, "--root", kSlurmHost,
                             "--window", "0", "--quiet", "--no-probe", "--no-kmsg"},
                            {scenario_env("dgx1-v100-slurm.json")});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  const nlohmann::json* thermal = nullptr;
  for (const auto& f : j["findings"]) {
    // GPU 4 at 88 °C, 2 °C under its shutdown threshold: gpu.thermal.near_shutdown.
    if (f["id"].get<std::string>().rfind("gpu.thermal.", 0) == 0) thermal = &f;
  }
  ASSERT_NE(thermal, nullptr) << j["findings"].dump(1);
  EXPECT_EQ((*thermal)["gpu"]["index"], 4);
  EXPECT_EQ((*thermal)["jobs"], nlohmann::json::parse(R"([{"source": "slurm", "id": "456"}])"));
  EXPECT_NE(
      (*thermal)["explanation"].get<std::string>().find("Running on this GPU: slurm job 456."),
      std::string::npos)
      << (*thermal)["explanation"];
  // Findings about GPUs without a job carry no "jobs" key.
  for (const auto& f : j["findings"]) {
    if (f["gpu"].is_object() && f["gpu"].value("index", -1) == 7) {
      EXPECT_FALSE(f.contains("jobs"));
    }
  }

  RunResult text = run_cardiac({"doctor", "--nvml-lib", FAKE_NVML_PATH, "--root", kSlurmHost,
                                "--window", "0", "--quiet", "--no-probe", "--no-kmsg"},
                               {scenario_env("dgx1-v100-slurm.json")});
  EXPECT_NE(text.out.find("slurm job 456"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace cardiac::e2e
