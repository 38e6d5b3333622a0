// SPDX-License-Identifier: Apache-2.0
// `cardiac plan` end to end: the fake NVML's 8 GPUs and their free memory, golden outputs for
// three models, a spec-table GPU, training, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

constexpr const char* kFixtures = CARDIAC_FIXTURES_DIR "/plan";
constexpr const char* kGoldenDir = CARDIAC_FIXTURES_DIR "/golden/plan";

RunResult plan_on_fake(std::vector<std::string> extra) {
  std::vector<std::string> args = {"plan", "--nvml-lib", FAKE_NVML_PATH};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cardiac(args, {scenario_env("healthy-8xh100.json")});
}

void expect_golden(const std::string& text, const std::string& name) {
  const std::string path = std::string(kGoldenDir) + "/" + name;
  if (std::getenv("CARDIAC_UPDATE_GOLDEN")) std::ofstream(path, std::ios::trunc) << text;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no golden file " << path
                  << " (run with CARDIAC_UPDATE_GOLDEN=1 to create it)";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str()) << "golden: " << path;
}

TEST(Plan, UsesTheFreeMemoryOfTheMachinesGpus) {
  RunResult r = plan_on_fake({"--model", "Llama-3.1-8B", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"]["source"], "nvml");
  EXPECT_EQ(j["gpus"]["count"], 8);
  EXPECT_EQ(j["gpus"]["total_bytes"], 85520809984ULL);
  // The fullest of the scenario's GPUs: 14.8 GB free of 85.5 GB.
  const auto free = j["gpus"]["free_bytes"].get<double>();
  EXPECT_LT(free, 15e9);
  // vLLM starts only with --gpu-memory-utilization lowered to what is free: 0.17.
  EXPECT_EQ(j["plan"]["memory_fraction_limit"], 0.17);
  EXPECT_EQ(j["plan"]["per_gpu"]["budget_bytes"], std::llround(85520809984 * 0.17));
  EXPECT_LE(j["plan"]["per_gpu"]["budget_bytes"].get<double>(), free);
  EXPECT_EQ(j["plan"]["tp"], 2);  // 16 GB of weights do not fit in one GPU's free memory
  EXPECT_EQ(j["plan"]["kv_bytes_per_token"], 131072);
  EXPECT_EQ(j["plan"]["kv_bytes_per_sequence"], 256 * 1024 * 1024);
}

TEST(Plan, GoldenTextForThreeModels) {
  RunResult llama =
      plan_on_fake({"--model", "Llama-3.1-8B", "--context", "8192", "--concurrency", "4"});
  EXPECT_EQ(llama.exit_code, 0) << llama.err;
  expect_golden(llama.out, "llama-3.1-8b.txt");
  // 141 GB of bf16 weights do not fit in the 8 GPUs' free memory; fp8 weights do.
  RunResult big = plan_on_fake({"--model", "Llama-3.1-70B"});
  EXPECT_EQ(big.exit_code, 1) << big.err;
  expect_golden(big.out, "llama-3.1-70b.txt");
  RunResult qwen = plan_on_fake(
      {"--model", std::string(kFixtures) + "/qwen2.5-7b-config.json", "--kv-dtype", "fp8"});
  EXPECT_EQ(qwen.exit_code, 0) << qwen.err;
  expect_golden(qwen.out, "qwen2.5-7b-config.txt");
}

TEST(Plan, GoldenJsonOnASpecGpu) {
  RunResult r = run_cardiac({"plan", "--model", "DeepSeek-V3", "--gpu", "H200", "--dtype", "fp8",
                             "--context", "32768", "--concurrency", "64", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(r.out, "deepseek-v3-h200.json");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"]["source"], "spec");
  EXPECT_EQ(j["plan"]["kv_bytes_per_token"], 576 * 61 * 2);  // MLA: latent + rope per layer
  EXPECT_FALSE(j["changes"].empty());
}

TEST(Plan, Training) {
  RunResult r = run_cardiac({"plan", "--model", "Llama-3.1-8B", "--train", "--gpu", "H100-80GB",
                             "--zero", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  const double params = j["model"]["parameters"].get<double>();
  const auto& g = j["plan"]["per_gpu"];
  // 16 bytes per parameter, ZeRO-3 over the 8 GPUs.
  EXPECT_DOUBLE_EQ(g["weights_bytes"].get<double>() + g["gradients_bytes"].get<double>() +
                       g["optimizer_bytes"].get<double>(),
                   params * 16 / 8);
  EXPECT_GE(j["plan"]["largest_micro_batch"].get<int>(), 1);
  RunResult none = run_cardiac(
      {"plan", "--model", "Llama-3.1-8B", "--train", "--gpu", "H100-80GB", "--gpus", "1"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("DOES NOT FIT"), std::string::npos) << none.out;
  // 16 bytes per parameter on one GPU; ZeRO-3 over 4 leaves room for the activations.
  EXPECT_NE(none.out.find("ZeRO-3 over 4 GPUs (--zero 3 --dp 4)"), std::string::npos) << none.out;
}

TEST(Plan, BadInputNamesTheFlagFileOrField) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--model", "llama-9"}, "--model llama-9: not a preset"},
      {{"--model", "Llama-3.1-8B", "--context=-5"},
       "--context: must be a positive number of tokens, not -5"},
      {{"--model", std::string(kFixtures) + "/truncated.json"}, "truncated.json: not valid JSON"},
      {{"--model", std::string(kFixtures) + "/bad-field.json"},
       "bad-field.json: field \"num_key_value_heads\": not an integer: \"eight\""},
      {{"--model", "Llama-3.1-8B", "--dtype", "fp4"}, "--dtype: 'fp4' is not one of"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"plan", "--gpu", "H100-80GB"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = run_cardiac(args);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  RunResult gpu = run_cardiac({"plan", "--model", "Llama-3.1-8B", "--gpu", "H900"});
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_NE(gpu.err.find("--gpu H900: unknown GPU"), std::string::npos) << gpu.err;
}

TEST(Plan, FewestGpusKeepThePipelineStagesGiven) {
  RunResult tp = run_cardiac({"plan", "--model", "Llama-3.1-70B", "--gpu", "H100-80GB", "--json"});
  ASSERT_EQ(tp.exit_code, 0) << tp.err;
  auto j = nlohmann::json::parse(tp.out);
  EXPECT_EQ(j["plan"]["tp"], 2);
  EXPECT_EQ(j["plan"]["pp"], 1);
  RunResult pp = run_cardiac(
      {"plan", "--model", "Llama-3.1-70B", "--gpu", "H100-80GB", "--pp", "2", "--json"});
  ASSERT_EQ(pp.exit_code, 0) << pp.err;
  j = nlohmann::json::parse(pp.out);
  EXPECT_EQ(j["plan"]["tp"], 1);
  EXPECT_EQ(j["plan"]["pp"], 2);
}

TEST(Plan, HtmlChart) {
  cardiac::testing::TempDir dir;
  const std::string page = dir.file("plan.html");
  RunResult r = run_cardiac({"plan", "--model", "Llama-3.1-8B", "--gpu", "H100-80GB",
                             "--concurrency", "32", "--html", page});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(page);
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("<svg"), std::string::npos);
  EXPECT_NE(html.str().find("FITS on 1 of 8 GPUs"), std::string::npos);  // the verdict
  RunResult bad = run_cardiac(
      {"plan", "--model", "Llama-3.1-8B", "--gpu", "H100-80GB", "--html", dir.file("no/x.html")});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err.find("--html"), std::string::npos) << bad.err;
}

TEST(Plan, NoGpuToPlanOnIsExitThree) {
  RunResult r = run_cardiac({"plan", "--model", "Llama-3.1-8B", "--nvml-lib", "/nonexistent.so"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cardiac::e2e
