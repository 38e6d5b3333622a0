// SPDX-License-Identifier: Apache-2.0
// `cardiac slurm …` where no Slurm is needed: cardiac's own trouble (a bad configuration,
// scontrol failing or hanging, a node Slurm does not know) with the exit codes docs/slurm.md
// promises, against a scontrol stand-in script. These run wherever the tests run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/slurm/cluster.h"

namespace cardiac::slurm_e2e {
namespace {

class SlurmHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cardiac-slurm-hooks-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // Nothing listens on loopback port 9 here, so the check samples locally (fake NVML).
    std::ofstream(dir_ + "/cardiac.toml")
        << "[nvml]\nlibrary = \"" << FAKE_NVML_PATH << "\"\ntimeout = \"1s\"\n"
        << "[host]\nroot = \"" << CARDIAC_FIXTURES_DIR << "/hosts/old-kernel\"\n"
        << "[agent]\nlisten = \"127.0.0.1:9\"\nstate_dir = \"" << dir_ << "/state\"\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A scontrol that prints `nodes` for `show node` and logs every other call.
  std::string stub(const std::string& nodes, const std::string& extra = "") const {
    std::ofstream(dir_ + "/nodes.txt") << nodes;
    const std::string path = dir_ + "/scontrol";
    std::ofstream(path) << "#!/bin/sh\n"
                        << extra << "if [ \"$1 $2\" = \"show node\" ]; then cat " << dir_
                        << "/nodes.txt; exit 0; fi\n"
                        << "echo \"$@\" >> " << dir_ << "/calls.txt\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }
  RunResult slurm(std::vector<std::string> args, const std::string& scenario_name,
                  std::vector<std::pair<std::string, std::string>> env = {}) const {
    args.insert(args.begin(), "slurm");
    env.push_back(e2e::scenario_env(scenario_name));
    return e2e::run_cardiac(args, env);
  }
  [[nodiscard]] std::string calls() const { return read_text(dir_ + "/calls.txt"); }

  std::string dir_;
};

TEST_F(SlurmHooks, LocalSampleDrainsThroughScontrolWithoutAnAgent) {
  auto sc = stub("NodeName=n1 State=IDLE\nNodeName=n2 State=IDLE\n");
  auto r = slurm({"healthcheck", "--config", dir_ + "/cardiac.toml", "--scontrol", sc},
                 "gpu-lost.json", {{"SLURMD_NODENAME", "n1"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.find("note: no agent answers") != std::string::npos) << r.out;
  EXPECT_EQ(calls(),
            "update NodeName=n1 State=DRAIN Reason=cardiac: GPU 5: lost from the bus "
            "(GPU_IS_LOST)\n");
}

TEST_F(SlurmHooks, ScontrolFromTheEnvironmentAndDryRun) {
  auto sc = stub("NodeName=n1 State=IDLE\n");
  auto r = slurm({"healthcheck", "--config", dir_ + "/cardiac.toml", "--node", "n1", "--dry-run"},
                 "gpu-lost.json", {{"CARDIAC_SCONTROL", sc}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.find("action: would drain (dry run)") != std::string::npos) << r.out;
  EXPECT_EQ(calls(), "");
}

TEST_F(SlurmHooks, ScontrolFailingOrUnknownNodeIsCannotRun) {
  auto failing = stub("",
                      "echo 'slurm_load_node error: Unable to contact slurm controller' "
                      ">&2; exit 1\n");
  auto r = slurm(
      {"healthcheck", "--config", dir_ + "/cardiac.toml", "--scontrol", failing, "--node", "n1"},
      "healthy-8xh100.json");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_TRUE(r.err.find("Unable to contact slurm controller") != std::string::npos) << r.err;

  auto other = stub("NodeName=gpu7 State=IDLE\n");
  auto unknown = slurm(
      {"healthcheck", "--config", dir_ + "/cardiac.toml", "--scontrol", other, "--node", "n1"},
      "healthy-8xh100.json");
  EXPECT_EQ(unknown.exit_code, 3) << unknown.out;
  EXPECT_TRUE(unknown.err.find("node 'n1' is not in Slurm's node list") != std::string::npos)
      << unknown.err;
}

TEST_F(SlurmHooks, HungScontrolIsKilledAtItsDeadline) {
  auto hung = stub("", "exec sleep 600\n");
  std::ofstream(dir_ + "/cardiac.toml", std::ios::app) << "[slurm]\nscontrol_timeout = \"300ms\"\n";
  auto r =
      slurm({"healthcheck", "--config", dir_ + "/cardiac.toml", "--scontrol", hung, "--node", "n1"},
            "healthy-8xh100.json");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_TRUE(r.err.find("no answer within") != std::string::npos) << r.err;
}

TEST_F(SlurmHooks, BadConfigurationFailsTheHealthCheckButNeverAJob) {
  std::ofstream(dir_ + "/bad.toml") << "[slurm]\ndrain_limit_percent = 400\n";
  auto hc =
      slurm({"healthcheck", "--config", dir_ + "/bad.toml", "--node", "n1"}, "healthy-8xh100.json");
  EXPECT_EQ(hc.exit_code, 2) << hc.out;
  EXPECT_TRUE(hc.err.find("bad.toml:2") != std::string::npos) << hc.err;
  EXPECT_TRUE(hc.err.find("slurm.drain_limit_percent") != std::string::npos) << hc.err;
  for (const char* hook : {"prolog", "epilog"}) {
    auto r = slurm({hook, "--config", dir_ + "/bad.toml", "--node", "n1"}, "gpu-lost.json",
                   {{"SLURM_JOB_ID", "7"}});
    EXPECT_EQ(r.exit_code, 0) << hook << ": " << r.out << r.err;
    EXPECT_TRUE(r.err.find("slurm.drain_limit_percent") != std::string::npos) << r.err;
  }
}

TEST_F(SlurmHooks, PrologJudgesOnlyTheJobsGpus) {
  auto sc = stub("NodeName=n1 State=IDLE\nNodeName=n2 State=IDLE\n");
  std::vector<std::pair<std::string, std::string>> env = {{"SLURMD_NODENAME", "n1"},
                                                          {"SLURM_JOB_ID", "42"}};
  // GPU 5 is lost; a job on GPUs 0 and 1 may start, with a note.
  auto others = env;
  others.emplace_back("SLURM_JOB_GPUS", "0,1");
  auto ok = slurm({"prolog", "--config", dir_ + "/cardiac.toml", "--scontrol", sc}, "gpu-lost.json",
                  others);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(ok.out.find("note: not this job's GPU: GPU 5") != std::string::npos) << ok.out;
  EXPECT_EQ(calls(), "");
  // A job given GPU 5 does not start; the node is drained with cardiac's reason first.
  auto mine = env;
  mine.emplace_back("CUDA_VISIBLE_DEVICES", "4,5");
  auto bad = slurm({"prolog", "--config", dir_ + "/cardiac.toml", "--scontrol", sc, "--json"},
                   "gpu-lost.json", mine);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  auto j = nlohmann::json::parse(bad.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << bad.out;
  EXPECT_EQ(j.value("job", ""), "42");
  EXPECT_EQ(j.value("action", ""), "drain");
  EXPECT_TRUE(calls().starts_with("update NodeName=n1 State=DRAIN Reason=cardiac: GPU 5"))
      << calls();
  // A GPU list cardiac cannot map is an error that lets the job start.
  auto uuid = env;
  uuid.emplace_back("SLURM_JOB_GPUS", "GPU-26a72a14");
  auto u = slurm({"prolog", "--config", dir_ + "/cardiac.toml", "--scontrol", sc}, "gpu-lost.json",
                 uuid);
  EXPECT_EQ(u.exit_code, 0) << u.out << u.err;
  EXPECT_TRUE(u.err.find("GPU-26a72a14") != std::string::npos) << u.err;
}

}  // namespace
}  // namespace cardiac::slurm_e2e
