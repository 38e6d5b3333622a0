// SPDX-License-Identifier: Apache-2.0
// `cardiac sim` end to end: the openb trace under several policies with every output, the
// checkpoint advisor, and bad input that names the file, line and field.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

std::string openb(const char* file) {
  return std::string(CARDIAC_FIXTURES_DIR) + "/traces/alibaba-openb/" + file;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string temp_dir() {
  char tmpl[] = "/tmp/cardiac-sim-e2e-XXXXXX";
  return mkdtemp(tmpl);
}

TEST(SimE2E, OpenbTraceUnderSeveralPoliciesWithEveryOutput) {
  const std::string dir = temp_dir();
  auto r = run_cardiac({"sim", "--trace", openb("openb_pod_list_default.csv"), "--nodes-file",
                        openb("openb_node_list_gpu_node.csv"), "--policy", "fcfs,backfill",
                        "--json", "--quiet", "--jobs-out", dir + "/jobs.csv", "--csv",
                        dir + "/series.csv", "--html", dir + "/report.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["label"], "backfill");
  EXPECT_EQ(j["runs"][1]["policy"], "backfill:fcfs");
  EXPECT_EQ(j["setup"]["cluster_gpus"], 6212);
  EXPECT_EQ(j["runs"][0]["summary"]["jobs"], 6203);
  EXPECT_EQ(j["runs"][0]["summary"]["completed"], 6203);
  const std::string jobs = slurp(dir + "/jobs.csv");
  EXPECT_EQ(jobs.substr(0, jobs.find('\n')),
            "policy,job_id,submit_time,start_time,end_time,gpus,restarts");
  EXPECT_EQ(std::count(jobs.begin(), jobs.end(), '\n'), 1 + 2 * 6203);
  EXPECT_NE(slurp(dir + "/series.csv").find("fcfs,0.000,"), std::string::npos);
  const std::string html = slurp(dir + "/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);  // self-contained
  std::filesystem::remove_all(dir);
}

// The issue's trace: on one 8-GPU machine with backfill on every pass, job 4 (2 GPUs, 1000 s)
// needs no more than the 2 GPUs extra when job 3's reservation begins (100), so it starts at
// 20 instead of behind the reservation.
TEST(SimE2E, EasyBackfillStartsAJobThatCannotDelayTheHead) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/t.csv") << "job_id,submit_time,gpus,duration\n0,0,2,10\n1,0,2,200\n"
                                   "2,0,4,100\n3,20,4,50\n4,20,2,1000\n";
  auto r =
      run_cardiac({"sim", "--trace", dir + "/t.csv", "--cluster", "1x8", "--policy", "backfill",
                   "--backfill-interval", "0", "--quiet", "--jobs-out", dir + "/jobs.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string jobs = slurp(dir + "/jobs.csv");
  EXPECT_NE(jobs.find("\n3,20.000,100.000,"), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("\n4,20.000,20.000,"), std::string::npos) << jobs;
  std::filesystem::remove_all(dir);
}

TEST(SimE2E, SameSeedSameTableWithFailures) {
  std::vector<std::string> args = {
      "sim",  "--synth",    "philly",          "--jobs",       "3000", "--cluster",
      "64x8", "--failures", "llama3:scale=20", "--checkpoint", "daly", "--quiet"};
  auto a = run_cardiac(args);
  auto b = run_cardiac(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("interruptions"), std::string::npos);
}

TEST(SimE2E, ConfigFileSweepsAndTunesThePolicies) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/sim.toml") << R"(synth = "philly"
jobs = 1500
cluster = "32x8"
policies = ["fcfs", "fairshare"]
failures = "llama3:scale=20"
checkpoint = ["daly", "fixed:1h"]
seeds = [1, 2]
nodes_per_domain = 8
[policy]
half_life = "1d"
fair_tree = false
[policy.weights]
fairshare = 10000
)";
  auto r = run_cardiac({"sim", "--config", dir + "/sim.toml", "--json", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 8u);  // 2 policies x 2 checkpoint policies x 2 seeds
  EXPECT_EQ(j["runs"][0]["label"], "fcfs | daly | seed 1");
  EXPECT_EQ(j["runs"][7]["label"], "fairshare | fixed:1h | seed 2");
  EXPECT_EQ(j["setup"]["nodes_per_domain"], 8);
  // Flags win over the file.
  r = run_cardiac({"sim", "--config", dir + "/sim.toml", "--policy", "sjf", "--seed", "3", "--json",
                   "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["label"], "sjf | fixed:1h");
  std::filesystem::remove_all(dir);
}

// --priority-calc-period and [policy] priority_calc_period set the same thing; a bad value is
// refused with the flag's text.
TEST(SimE2E, PriorityCalcPeriodFromTheFlagOrTheFile) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/p.toml") << "[policy]\npriority_calc_period = \"0s\"\n";
  const std::vector<std::string> base = {"sim",       "--synth",   "philly", "--jobs",
                                         "400",       "--cluster", "4x8",    "--policy",
                                         "fairshare", "--json",    "--quiet"};
  std::vector<std::string> flag = base;
  flag.insert(flag.end(), {"--priority-calc-period", "0"});
  std::vector<std::string> file = base;
  file.insert(file.end(), {"--config", dir + "/p.toml"});
  auto a = run_cardiac(flag);
  auto b = run_cardiac(file);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["runs"], nlohmann::json::parse(b.out)["runs"]);
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--priority-calc-period", "soon"});
  auto c = run_cardiac(bad);
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.err.find("--priority-calc-period 'soon'"), std::string::npos) << c.err;
  std::filesystem::remove_all(dir);
}

// Stragglers from the flags or the [fail_slow] table: a detection sweep is one run per
// detection time, labelled by it, with the GPU time lost to slow GPUs in the JSON; shaping
// stragglers without a rate, or a bad factor, is refused naming the flag or the key.
TEST(SimE2E, FailSlowDetectionSweepFromTheFlagsOrTheFile) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/s.toml") << R"([fail_slow]
rate = 0.01
factor = 2
detection = ["10m", "4h"]
repair = "12h"
)";
  const std::vector<std::string> base = {"sim",       "--synth", "philly", "--jobs", "600",
                                         "--cluster", "8x8",     "--seed", "2",      "--failures",
                                         "llama3",    "--json",  "--quiet"};
  std::vector<std::string> flag = base;
  flag.insert(flag.end(),
              {"--fail-slow", "0.01", "--fail-slow-factor", "2", "--fail-slow-detection", "10m",
               "--fail-slow-detection", "4h", "--fail-slow-repair", "12h"});
  std::vector<std::string> file = base;
  file.insert(file.end(), {"--config", dir + "/s.toml"});
  auto a = run_cardiac(flag);
  auto b = run_cardiac(file);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["runs"], nlohmann::json::parse(b.out)["runs"]);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["label"], "fcfs | detect 10m");
  EXPECT_EQ(j["runs"][1]["label"], "fcfs | detect 4h");
  EXPECT_EQ(j["setup"]["fail_slow"]["factor"], 2.0);
  const auto& slow = j["runs"][0]["summary"]["fail_slow"];
  ASSERT_TRUE(slow.is_object()) << a.out;
  EXPECT_GT(slow["stragglers"].get<int>(), 0);
  EXPECT_TRUE(slow["lost_gpu_h"].contains("pace"));
  // Without --fail-slow nothing about stragglers shows.
  auto c = run_cardiac(base);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_FALSE(nlohmann::json::parse(c.out)["runs"][0]["summary"].contains("fail_slow"));

  std::vector<std::string> no_rate = base;
  no_rate.insert(no_rate.end(), {"--fail-slow-detection", "5m"});
  auto d = run_cardiac(no_rate);
  EXPECT_NE(d.exit_code, 0);
  EXPECT_NE(d.err.find("--fail-slow RATE"), std::string::npos) << d.err;
  std::vector<std::string> bad_factor = base;
  bad_factor.insert(bad_factor.end(), {"--fail-slow", "typical", "--fail-slow-factor", "0.5"});
  auto e = run_cardiac(bad_factor);
  EXPECT_NE(e.exit_code, 0);
  EXPECT_NE(e.err.find("fail-slow factor"), std::string::npos) << e.err;
  std::ofstream(dir + "/bad.toml") << "[fail_slow]\nrate = \"often\"\n";
  auto f = run_cardiac(
      {"sim", "--synth", "philly", "--jobs", "10", "--quiet", "--config", dir + "/bad.toml"});
  EXPECT_NE(f.exit_code, 0);
  EXPECT_NE(f.err.find("bad.toml:2"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("fail_slow.rate"), std::string::npos) << f.err;
  std::filesystem::remove_all(dir);
}

// --days with --load and no --jobs: the workload is sized to fill the cluster to that load for
// that long (philly: mean 1.93 GPUs, 5 h; 0.5 x 128 GPUs x 10 days is about 1,600 jobs).
TEST(SimE2E, DaysAndLoadSizeTheSyntheticWorkload) {
  auto r = run_cardiac({"sim", "--synth", "philly", "--load", "0.5", "--cluster", "16x8", "--days",
                        "10", "--json", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto jobs = j["setup"]["jobs"].get<double>();
  EXPECT_NEAR(jobs, 0.5 * 128 * 10 * 86400 / (1.928 * 18006), 0.1 * jobs);
  // From the first arrival (minutes in) to the horizon.
  EXPECT_NEAR(j["runs"][0]["summary"]["span_s"].get<double>(), 10 * 86400, 3600);
  r = run_cardiac({"sim", "--synth", "philly", "--load", "0.9", "--cluster", "12500x8", "--days",
                   "3650", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give --jobs"), std::string::npos) << r.err;
}

TEST(SimE2E, CheckpointAdvisorGivesDalysInterval) {
  auto r = run_cardiac({"sim", "checkpoint", "--gpus", "16384", "--mtbf-gpu-hours", "50680",
                        "--write", "60s", "--restart", "10m", "--json", "--runs", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  // reliability.md 8c: 16,384 GPUs, δ = 60 s: τ 18.6 min, ETTR 0.853 at R = 10 min.
  EXPECT_NEAR(j["daly_interval_s"].get<double>() / 60, 18.6, 0.1);
  EXPECT_NEAR(j["ettr_daly"].get<double>(), 0.853, 0.002);
  EXPECT_NEAR(j["monte_carlo"]["ettr"].get<double>(), 0.853, 0.02);
}

TEST(SimE2E, BadInputNamesTheFileLineAndField) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/t.csv") << "job_id,submit_time,gpus,duration\n1,0,2,60\n2,5,x,60\n";
  auto r = run_cardiac({"sim", "--trace", dir + "/t.csv", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/t.csv:3:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gpus"), std::string::npos) << r.err;

  std::ofstream(dir + "/c.toml") << "cluster = \"4x8\"\npolices = [\"fcfs\"]\n";
  r = run_cardiac({"sim", "--config", dir + "/c.toml", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/c.toml:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown key 'polices'"), std::string::npos) << r.err;
  std::ofstream(dir + "/c.toml", std::ios::trunc) << "cluster = \"4x8\"\npolicy = \"fcfs\"\n";
  r = run_cardiac({"sim", "--config", dir + "/c.toml", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'policy' must be a table"), std::string::npos) << r.err;

  std::ofstream(dir + "/p.toml") << "cluster = \"4x8\"\n[policy]\nhalf_lfe = \"1d\"\n";
  r = run_cardiac({"sim", "--config", dir + "/p.toml", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/p.toml:3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("policy.half_lfe"), std::string::npos) << r.err;

  r = run_cardiac({"sim", "--synth", "philly", "--cluster", "4y8", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'4y8'"), std::string::npos) << r.err;
  r = run_cardiac({"sim", "--synth", "philly", "--policy", "fcfs,nonsense", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nonsense"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

// Job ids as real traces write them; the per-job CSV gives them back as written.
TEST(SimE2E, TextJobIdsRunAndComeBackInTheJobsCsv) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/t.csv") << "job_id,submit_time,gpus,duration\n"
                                   "application_1700000000_0042,0,4,60\n"
                                   "j17,10,2,30\n"
                                   "\"x,1\",20,1,5\n";
  auto r = run_cardiac({"sim", "--trace", dir + "/t.csv", "--cluster", "1x8", "--quiet",
                        "--jobs-out", dir + "/jobs.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string jobs = slurp(dir + "/jobs.csv");
  EXPECT_NE(jobs.find("\napplication_1700000000_0042,0.000,"), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("\nj17,10.000,"), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("\n\"x,1\",20.000,"), std::string::npos) << jobs;
  std::filesystem::remove_all(dir);
}

// Each of these ran before (10,000 jobs for --jobs 0, synth:philly for nothing, std::bad_alloc
// for 1e11): now each is a usage error that says what is wrong.
TEST(SimE2E, SyntheticWorkloadFlagsAreChecked) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--synth", "philly", "--jobs", "0"}, "--jobs 0: expected a whole number from 1"},
      {{"--synth", "philly", "--jobs", "1e11"}, "from 1 to 50,000,000"},
      {{"--synth", "philly", "--jobs", "2.5"}, "expected a whole number"},
      {{"--synth", "philly", "--load", "-0.5"}, "--load -0.5: expected a positive number"},
      {{"--synth", "philly", "--load", "0"}, "--load 0: expected a positive number"},
      {{"--cluster", "4x8"}, "no workload: give --trace FILE or --synth PRESET"},
      {{"--synth", "philly", "--cluster", "4x100"}, "GPUs per node must be from 1 to 64"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"sim", "--quiet"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_cardiac(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  const std::string dir = temp_dir();
  std::ofstream(dir + "/t.csv") << "job_id,submit_time,gpus,duration\n1,0,1,5\n";
  auto r = run_cardiac({"sim", "--quiet", "--trace", dir + "/t.csv", "--jobs", "100"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a trace brings its own jobs"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

// A binary file's first line reaches the error message with its control bytes replaced.
TEST(SimE2E, BinaryTraceHeaderIsNotEchoedRaw) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/t.bin", std::ios::binary)
      << std::string("\x1b[2J\x1b]0;owned\x07\x00\x01PK\x03\x04", 16) << "\nrest\n";
  auto r = run_cardiac({"sim", "--quiet", "--trace", dir + "/t.bin"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot tell the trace format"), std::string::npos) << r.err;
  for (char c : r.err) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
        << "control byte " << static_cast<int>(c) << " in: " << r.err;
  }
  std::filesystem::remove_all(dir);
}

TEST(SimE2E, CheckpointJudgesAGivenIntervalWithBothModels) {
  // 1,024 GPUs at 50,680 GPU-hours: M = 49.5 h; an hour between checkpoints, 60 s writes.
  auto r =
      run_cardiac({"sim", "checkpoint", "--gpus", "1024", "--mtbf-gpu-hours", "50680", "--write",
                   "60s", "--restart", "10m", "--interval", "60m", "--json", "--runs", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["intervals"].size(), 3u);
  const auto& given = j["intervals"][2];
  EXPECT_EQ(given["name"], "given");
  EXPECT_EQ(given["interval_s"], 3600);
  const double m = 50680.0 * 3600 / 1024, tau = 3600, d = 60, rr = 600;
  EXPECT_NEAR(given["ettr"].get<double>(), tau / (m * std::exp(rr / m) * std::expm1((tau + d) / m)),
              1e-9);
  EXPECT_NEAR(given["ettr_meta"].get<double>(), (1 - (rr + tau / 2) / m) / (1 + d / tau), 1e-9);
  EXPECT_EQ(j["monte_carlo"]["interval"], "given");
  EXPECT_NEAR(j["monte_carlo"]["ettr"].get<double>(), given["ettr"].get<double>(), 0.02);

  // Text: both models side by side, one row per interval.
  r = run_cardiac({"sim", "checkpoint", "--gpus", "1024", "--mtbf-gpu-hours", "50680", "--write",
                   "60s", "--interval", "60m", "--runs", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("first-order (Meta)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--interval"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Monte Carlo at the --interval interval"), std::string::npos) << r.out;
}

TEST(SimE2E, CheckpointSaysWhenTheModelsDiverge) {
  // 16,384 GPUs at Llama 3's rate: M is about 3 h, so an 8 h interval is far past first order.
  auto r = run_cardiac({"sim", "checkpoint", "--gpus", "16384", "--failures", "llama3", "--write",
                        "60s", "--interval", "8h", "--runs", "50"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(diverge)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("points off the full model"), std::string::npos) << r.out;
  r = run_cardiac({"sim", "checkpoint", "--gpus", "16384", "--failures", "llama3", "--write", "60s",
                   "--interval", "8h", "--runs", "50", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["intervals"][2]["diverge"].get<bool>());
  EXPECT_FALSE(j["intervals"][1]["diverge"].get<bool>());  // Daly's interval: they agree
}

TEST(SimE2E, CheckpointOverlappedWritesAndAFreeWrite) {
  auto r = run_cardiac({"sim", "checkpoint", "--gpus", "1024", "--mtbf-gpu-hours", "50680",
                        "--write", "5m", "--overlap", "--json", "--runs", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["write"], "overlapped");
  // Nothing stalls, so the best interval is one write in flight at a time.
  EXPECT_EQ(j["daly_interval_s"], 300);
  EXPECT_NEAR(j["monte_carlo"]["ettr"].get<double>(), j["ettr_daly"].get<double>(), 0.02);

  // A free write: intervals bottom out at 1 s, and nothing prints as nan.
  for (bool json : {true, false}) {
    std::vector<std::string> args = {"sim",   "checkpoint", "--gpus", "8",      "--mtbf-gpu-hours",
                                     "50680", "--write",    "0s",     "--runs", "20"};
    if (json) args.push_back("--json");
    r = run_cardiac(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  }
}

TEST(SimE2E, CheckpointRefusesTwoSourcesOfTheFailureRate) {
  auto r = run_cardiac(
      {"sim", "checkpoint", "--gpus", "1024", "--mtbf-gpu-hours", "50680", "--failures", "llama3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give --mtbf-gpu-hours or --failures, not both"), std::string::npos)
      << r.err;
  r = run_cardiac({"sim", "checkpoint", "--gpus", "8", "--mtbf-gpu-hours", "-3"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_cardiac({"sim", "checkpoint", "--gpus", "8", "--failures", "llama3", "--interval", "0s"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--interval"), std::string::npos) << r.err;
}

// A job runs on whole GPUs: 1.4 used to be printed as "1 GPUs" and computed as 1.4.
TEST(SimE2E, CheckpointTakesAWholePositiveNumberOfGpus) {
  for (const char* gpus : {"1.4", "0", "-2", "0.5"}) {
    auto r = run_cardiac({"sim", "checkpoint", "--gpus", gpus, "--mtbf-gpu-hours", "100"});
    EXPECT_EQ(r.exit_code, 2) << gpus << ": " << r.out;
    EXPECT_NE(r.err.find("--gpus"), std::string::npos) << gpus << ": " << r.err;
    EXPECT_NE(r.err.find("whole positive number"), std::string::npos) << gpus << ": " << r.err;
  }
  auto one = run_cardiac({"sim", "checkpoint", "--gpus", "1", "--mtbf-gpu-hours", "100"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("job of 1 GPU, "), std::string::npos) << one.out;
  auto two = run_cardiac({"sim", "checkpoint", "--gpus", "2", "--mtbf-gpu-hours", "100"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("job of 2 GPUs, "), std::string::npos) << two.out;
}

}  // namespace
}  // namespace cardiac::e2e
