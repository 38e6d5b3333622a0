// SPDX-License-Identifier: Apache-2.0
// `cardiac sim serve` end to end: text, --json, --compare with --html, a trace with classes,
// and bad input that names the flag or the file, line and field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

TEST(SimServeE2E, TextShowsThePolicyAndItsFigures) {
  auto r = run_cardiac({"sim", "serve", "--requests", "300", "--rate", "5", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // --quiet
  EXPECT_NE(r.out.find("Llama-3.1-8B on 1 × H100-80GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("continuous-paged"), std::string::npos);
  EXPECT_NE(r.out.find("300 of 300"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TTFT p99"), std::string::npos);
  EXPECT_NE(r.out.find("KV waste"), std::string::npos);
}

TEST(SimServeE2E, JsonCompareAndHtml) {
  testing::TempDir dir;
  const std::string html = dir.path() + "/serve.html";
  auto r = run_cardiac({"sim",          "serve",
                        "--model",      "Llama-3.1-70B",
                        "--gpu",        "H200",
                        "--gpus",       "8",
                        "--tp",         "4",
                        "--requests",   "2000",
                        "--rate",       "20",
                        "--prompt-len", "uniform:100:2000",
                        "--output-len", "lognormal:200:2048",
                        "--compare",    "--json",
                        "--html",       html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Not a terminal: the header line only, no progress bar.
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["setup"]["replicas"], 2);
  EXPECT_EQ(j["setup"]["model"], "Llama-3.1-70B");
  ASSERT_EQ(j["runs"].size(), 4u);
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["completed"], 2000) << run["policy"];
    EXPECT_GT(run["output_tokens_per_s"].get<double>(), 0);
    EXPECT_LE(run["kv"]["peak_allocated_tokens"].get<std::int64_t>(),
              run["kv"]["budget_tokens"].get<std::int64_t>());
    EXPECT_LE(run["ttft"]["p50_s"].get<double>(), run["ttft"]["p99_s"].get<double>());
  }
  // Static batching pads; continuous does not.
  EXPECT_GT(j["runs"][0]["padding_waste"].get<double>(), 0.3);
  EXPECT_EQ(j["runs"][3]["padding_waste"].get<double>(), 0);
  std::ifstream in(html);
  std::stringstream page;
  page << in.rdbuf();
  EXPECT_NE(page.str().find("<svg"), std::string::npos);
  EXPECT_NE(page.str().find("static-paged"), std::string::npos);
}

TEST(SimServeE2E, TraceWithClasses) {
  testing::TempDir dir;
  const std::string trace = dir.path() + "/t.csv";
  std::ofstream(trace) << "arrival,prompt_tokens,output_tokens,class\n"
                          "0.0,500,100,chat\n0.01,800,300,bulk\n0.02,200,50,chat\n";
  auto r = run_cardiac({"sim", "serve", "--trace", trace, "--class", "chat:1:ttft=200ms", "--class",
                        "bulk:1", "--json", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["completed"], 3);
  EXPECT_EQ(run["input_tokens"], 1500);
  EXPECT_EQ(run["output_tokens"], 450);
  ASSERT_EQ(run["classes"].size(), 2u);
  EXPECT_EQ(run["classes"][0]["name"], "chat");
  EXPECT_EQ(run["classes"][0]["requests"], 2);
  EXPECT_EQ(run["classes"][0]["slo_met"], 1.0);
  EXPECT_TRUE(run["classes"][1]["slo_met"].is_null());
}

TEST(SimServeE2E, BadInputNamesWhereItIs) {
  testing::TempDir dir;
  const std::string trace = dir.path() + "/bad.csv";
  std::ofstream(trace) << "0,100,10\n1.5,abc,10\n";
  auto r = run_cardiac({"sim", "serve", "--trace", trace, "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(trace + ":2:prompt_tokens"), std::string::npos) << r.err;
  r = run_cardiac({"sim", "serve", "--gpu", "H900", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--gpu H900"), std::string::npos) << r.err;
  r = run_cardiac({"sim", "serve", "--output-len", "lognormal:10", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--output-len"), std::string::npos) << r.err;
  r = run_cardiac({"sim", "serve", "--model", "Llama-3.1-405B", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tp"), std::string::npos) << r.err;
  r = run_cardiac({"sim", "serve", "--policy", "fifo", "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--policy 'fifo'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cardiac::e2e
