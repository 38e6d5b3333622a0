// SPDX-License-Identifier: Apache-2.0
// `cardiac export slurm-gres` end to end: the real binary over the fake NVML (8 V100 in an
// NVLink hybrid cube-mesh) and a host tree with two NUMA nodes, against a golden gres.conf;
// the NodeName line, JSON, writing a file, and the refusals that keep Slurm from being told
// a node has fewer GPUs than it has.
#include <gtest/gtest.h>

#include <map>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

const std::string kFixtures = CARDIAC_FIXTURES_DIR;
const std::string kHost = kFixtures + "/hosts/slurm-node-2numa";
const std::string kGolden = kFixtures + "/golden/gres/dgx1-v100.gres.conf";

std::vector<std::string> gres_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"export", "slurm-gres", "--nvml-lib", FAKE_NVML_PATH,
                                "--root", kHost,        "--config",   "/dev/null"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(SlurmGres, EightGpusTwoNumaNodesMatchTheGolden) {
  RunResult r = run_cardiac(gres_args(), {scenario_env("dgx1-v100-slurm.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, read_text(kGolden)) << "got:\n" << r.out;
}

// Slurm's own reader: `slurmd -G` prints every GRES it read from gres.conf. The device files
// are made links to /dev/null (slurmd wants a character device), and Cores= is dropped since
// slurmd maps core indices onto the CPUs of the machine it runs on; the rest is as written.
TEST(SlurmGres, SlurmdReadsTheFileAsWritten) {
  if (::access("/usr/sbin/slurmd", X_OK) != 0) GTEST_SKIP() << "no /usr/sbin/slurmd (slurmd)";
  RunResult r = run_cardiac(gres_args(), {scenario_env("dgx1-v100-slurm.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult node = run_cardiac(gres_args({"--node-line"}), {scenario_env("dgx1-v100-slurm.json")});
  ASSERT_EQ(node.exit_code, 0) << node.err;
  testing::TempDir dir;
  std::filesystem::create_directory(dir.file("dev"));
  std::string conf = std::regex_replace(r.out, std::regex(" Cores=[0-9,-]+"), "");
  conf = std::regex_replace(conf, std::regex("File=/dev/"), "File=" + dir.file("dev") + "/");
  for (int minor = 0; minor < 8; ++minor) {
    std::filesystem::create_symlink("/dev/null", dir.file("dev/nvidia" + std::to_string(minor)));
  }
  dir.write("gres.conf", conf);
  const std::string slurm_conf =
      dir.write("slurm.conf",
                "ClusterName=gres-test\nSlurmctldHost=localhost\nGresTypes=gpu\n"
                "SlurmdSpoolDir=" +
                    dir.file("spool") + "\nSlurmdPidFile=" + dir.file("slurmd.pid") + "\n" +
                    node.out + "PartitionName=p Nodes=gpu-node-07 Default=YES\n");
  std::string out;
  FILE* p = ::popen(
      ("timeout 60 /usr/sbin/slurmd -G -f '" + slurm_conf + "' -N gpu-node-07 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  EXPECT_EQ(::pclose(p), 0) << out;
  // One "Gres Name=gpu Type=v100 Count=1 Index=N … File=…/nvidiaN Links=…" line per GPU, its
  // index the file's number, its Links= ours with -1 at that index.
  std::map<int, std::string> links;
  const std::regex line(
      R"(Gres Name=gpu Type=v100 Count=1 Index=(\d+) .*File=\S+/nvidia(\d+) Links=(\S+))");
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    EXPECT_EQ(m[1], m[2]) << l;
    links[std::stoi(m[1])] = m[3];
  }
  ASSERT_EQ(links.size(), 8u) << out;
  for (const auto& [index, list] : links) {
    EXPECT_NE(conf.find("File=" + dir.file("dev") + "/nvidia" + std::to_string(index) +
                        " Links=" + list + "\n"),
              std::string::npos)
        << list;
    std::vector<std::string> parts;
    std::istringstream items(list);
    for (std::string item; std::getline(items, item, ',');) parts.push_back(item);
    ASSERT_EQ(parts.size(), 8u) << list;
    EXPECT_EQ(parts[static_cast<std::size_t>(index)], "-1") << "GPU " << index << ": " << list;
  }
}

TEST(SlurmGres, NodeLineAndJson) {
  RunResult line = run_cardiac(gres_args({"--node-line"}), {scenario_env("dgx1-v100-slurm.json")});
  ASSERT_EQ(line.exit_code, 0) << line.err;
  EXPECT_EQ(line.out, "NodeName=gpu-node-07 Gres=gpu:v100:8\n");

  RunResult js = run_cardiac(gres_args({"--json", "--node-name", "n7", "--type", "v100_32g"}),
                             {scenario_env("dgx1-v100-slurm.json")});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["schema"], "cardiac.slurm-gres/v1");
  EXPECT_EQ(j["node_line"], "NodeName=n7 Gres=gpu:v100_32g:8");
  ASSERT_EQ(j["gpus"].size(), 8u);
  // GPUs 2 and 3 have each other's minor numbers: the lines and Links= follow the minor
  // (Slurm's index of a File=), not NVML's index.
  EXPECT_EQ(j["gpus"][2]["file"], "/dev/nvidia2");
  EXPECT_EQ(j["gpus"][2]["index"], 3);
  EXPECT_EQ(j["gpus"][2]["pci_bus_id"], "0000:0b:00.0");
  EXPECT_EQ(j["gpus"][4]["cpus"], "8-15,24-31");
  EXPECT_EQ(j["gpus"][4]["cores"], "8-15");
  EXPECT_EQ(j["gpus"][0]["links"], nlohmann::json({-1, 1, 2, 1, 2, 0, 0, 0}));
}

TEST(SlurmGres, WritesTheFileWholeAndNothingOnFailure) {
  testing::TempDir dir;
  const std::string out = dir.file("gres.conf");
  RunResult r = run_cardiac(gres_args({"-o", out}), {scenario_env("dgx1-v100-slurm.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_text(out), read_text(kGolden));

  // A lost GPU: no file is written over the good one.
  RunResult lost = run_cardiac(gres_args({"-o", out}), {scenario_env("gpu-lost.json")});
  EXPECT_EQ(lost.exit_code, 3);
  EXPECT_NE(lost.err.find("GPU 5"), std::string::npos) << lost.err;
  EXPECT_NE(lost.err.find("No gres.conf written"), std::string::npos) << lost.err;
  EXPECT_EQ(read_text(out), read_text(kGolden));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(SlurmGres, RefusesToClaimZeroGpus) {
  RunResult none = run_cardiac(gres_args(), {scenario_env("zero-gpus.json")});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_EQ(none.out, "");
  EXPECT_NE(none.err.find("lists no GPU"), std::string::npos) << none.err;

  RunResult nolib =
      run_cardiac({"export", "slurm-gres", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1", "--root",
                   kHost, "--config", "/dev/null"});
  EXPECT_EQ(nolib.exit_code, 3);
  EXPECT_EQ(nolib.out, "");
  EXPECT_NE(nolib.err.find("cannot load NVML library /nonexistent/libnvidia-ml.so.1"),
            std::string::npos)
      << nolib.err;

  RunResult driver = run_cardiac(gres_args(), {scenario_env("driver-not-loaded.json")});
  EXPECT_EQ(driver.exit_code, 3);
  EXPECT_NE(driver.err.find("driver_not_loaded"), std::string::npos) << driver.err;
}

TEST(SlurmGres, NvSwitchBoardLeavesLinksOutAndSaysWhy) {
  // healthy-8xh100's links name no far end; the note says so instead of writing zeros.
  RunResult r = run_cardiac(gres_args({"--node-name", "h"}), {scenario_env("healthy-8xh100.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (std::size_t at = r.out.find("\nName="); at != std::string::npos;
       at = r.out.find("\nName=", at + 1)) {
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_EQ(line.find("Links="), std::string::npos) << line;
  }
  EXPECT_NE(r.err.find("Links= left out"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("# Note: Links= left out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Name=gpu Type=h100 File=/dev/nvidia0\n"), std::string::npos) << r.out;
}

TEST(SlurmGres, BadFlags) {
  RunResult type =
      run_cardiac(gres_args({"--type", "H100 SXM"}), {scenario_env("dgx1-v100-slurm.json")});
  EXPECT_EQ(type.exit_code, 2);
  EXPECT_NE(type.err.find("--type"), std::string::npos) << type.err;
  RunResult both = run_cardiac(gres_args({"--json", "--node-line"}));
  EXPECT_EQ(both.exit_code, 2);
  RunResult root = run_cardiac({"export", "slurm-gres", "--root", "/nonexistent-root"});
  EXPECT_EQ(root.exit_code, 2);
  EXPECT_NE(root.err.find("/nonexistent-root"), std::string::npos) << root.err;
}

}  // namespace
}  // namespace cardiac::e2e
