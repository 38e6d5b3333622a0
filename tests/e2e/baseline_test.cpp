// SPDX-License-Identifier: Apache-2.0
// `cardiac baseline capture` / `show` and `cardiac doctor --baseline` end to end: a baseline
// taken on one captured host (over the fake NVML), the doctor run on another that differs in
// driver, kernel, two libraries and a boot parameter.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

constexpr const char* kBaselineFixtures = CARDIAC_FIXTURES_DIR;
constexpr const char* kNode01 = CARDIAC_FIXTURES_DIR "/hosts/debian-gpu-8x";
constexpr const char* kNode02 = CARDIAC_FIXTURES_DIR "/hosts/gpu-node-02-drift";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "id severity [gpu]" of every drift.* finding, in report order.
std::vector<std::string> drift(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& f : j["findings"]) {
    const std::string id = f["id"];
    if (!id.starts_with("drift.")) continue;
    out.push_back(id + " " + f["severity"].get<std::string>());
  }
  return out;
}

RunResult doctor(const std::string& baseline, const std::string& root,
                 std::vector<std::string> more = {}) {
  std::vector<std::string> args{
      "doctor",   "--json", "--quiet",    "--baseline", baseline,     "--root",      root,
      "--window", "0",      "--no-probe", "--no-kmsg",  "--nvml-lib", FAKE_NVML_PATH};
  args.insert(args.end(), more.begin(), more.end());
  return run_cardiac(args, {scenario_env("healthy-8xh100.json")});
}

TEST(BaselineCli, CaptureOnOneHostThenDoctorOnTheOther) {
  cardiac::testing::TempDir dir;
  const std::string file = dir.path() + "/node01.json";
  auto cap = run_cardiac(
      {"baseline", "capture", "-o", file, "--root", kNode01, "--nvml-lib", FAKE_NVML_PATH},
      {scenario_env("healthy-8xh100.json")});
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  EXPECT_NE(cap.out.find("library.nccl"), std::string::npos) << cap.out;
  EXPECT_NE(cap.err.find("written to " + file), std::string::npos) << cap.err;
  auto j = nlohmann::json::parse(read(file), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["schema"], "cardiac.baseline/v1");
  EXPECT_EQ(j["hostname"], "gpu-node-01");
  std::map<std::string, nlohmann::json> facts;
  for (const auto& f : j["facts"]) facts[f["key"]] = f["value"];
  EXPECT_EQ(facts["driver"], "550.54.15");
  EXPECT_EQ(facts["gpu.count"], "8");
  EXPECT_TRUE(facts["cuda"].is_string()) << facts["cuda"];  // NVML was asked
  EXPECT_TRUE(facts["gpu.7.power_limit_w"].is_string());

  // show: the same file as JSON, and as a table.
  auto show = run_cardiac({"baseline", "show", file, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out), j);
  auto table = run_cardiac({"baseline", "show", file});
  EXPECT_NE(table.out.find("baseline of gpu-node-01"), std::string::npos) << table.out;

  // The other host: every difference, with its severity, and nothing else.
  auto r = doctor(file, kNode02);
  auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(drift(report),
            (std::vector<std::string>{"drift.driver critical", "drift.kernel warning",
                                      "drift.library warning", "drift.library warning",
                                      "drift.kernel_params info"}));
  bool said = false;
  for (const auto& f : report["findings"]) {
    if (f["id"] == "drift.driver") {
      EXPECT_EQ(f["category"], "configuration");
      EXPECT_TRUE(f["explanation"].get<std::string>().starts_with(
          "driver 535.161.08 here, 550.54.15 in the baseline: mixed drivers in one job hang "
          "NCCL"))
          << f["explanation"];
      said = true;
    }
  }
  EXPECT_TRUE(said);
  // The text form says it too.
  auto text =
      run_cardiac({"doctor", "--quiet", "--baseline", file, "--root", kNode02, "--window", "0",
                   "--no-probe", "--no-kmsg", "--nvml-lib", FAKE_NVML_PATH, "--color", "never"},
                  {scenario_env("healthy-8xh100.json")});
  EXPECT_NE(text.out.find("535.161.08 here, 550.54.15 in the baseline"), std::string::npos)
      << text.out;

  // The host it was taken on: no drift.
  auto same = doctor(file, kNode01);
  auto same_j = nlohmann::json::parse(same.out, nullptr, false);
  ASSERT_FALSE(same_j.is_discarded()) << same.out << same.err;
  EXPECT_EQ(drift(same_j), std::vector<std::string>{});

  // Offline, NVML's facts cannot be read here: said, never passed.
  auto off = run_cardiac(
      {"doctor", "--json", "--quiet", "--offline", "--baseline", file, "--root", kNode01});
  auto off_j = nlohmann::json::parse(off.out, nullptr, false);
  ASSERT_FALSE(off_j.is_discarded()) << off.out << off.err;
  EXPECT_EQ(drift(off_j), (std::vector<std::string>{"drift.clocks warning", "drift.cuda warning",
                                                    "drift.gpu warning", "drift.gpu_mode warning",
                                                    "drift.power_limit warning"}));
  EXPECT_EQ(off.exit_code, 1);
}

// Application clocks through the whole path (fake NVML → worker → baseline → doctor): a
// baseline taken where every H100 runs at its default clocks, then the same node with GPU 3
// lowered by `nvidia-smi -ac 2619,1755`.
TEST(BaselineCli, ApplicationClocksBelowTheDefaultOnOneGpu) {
  cardiac::testing::TempDir dir;
  const std::string file = dir.path() + "/node01.json";
  auto cap = run_cardiac(
      {"baseline", "capture", "-o", file, "--root", kNode01, "--nvml-lib", FAKE_NVML_PATH},
      {scenario_env("healthy-8xh100.json")});
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  auto show = run_cardiac({"baseline", "show", file});
  EXPECT_NE(show.out.find("1980/2619"), std::string::npos) << show.out;
  std::map<std::string, nlohmann::json> facts;
  const auto captured = nlohmann::json::parse(read(file));
  for (const auto& f : captured["facts"]) facts[f["key"]] = f["value"];
  EXPECT_EQ(facts["gpu.3.app_clocks"], "1980/2619");
  EXPECT_EQ(facts["gpu.3.app_clocks_default"], "1980/2619");

  auto scenario =
      nlohmann::json::parse(read(std::string(kFixtures) + "/scenarios/healthy-8xh100.json"));
  scenario["devices"][3]["app_clock_graphics_mhz"] = 1755;
  const std::string lowered = dir.path() + "/lowered.json";
  std::ofstream(lowered) << scenario.dump();
  auto r = run_cardiac({"doctor", "--json", "--quiet", "--baseline", file, "--root", kNode01,
                        "--window", "0", "--no-probe", "--no-kmsg", "--nvml-lib", FAKE_NVML_PATH},
                       {{"CARDIAC_FAKE_NVML_SCENARIO", lowered}});
  auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out << r.err;
  EXPECT_EQ(drift(report), std::vector<std::string>{"drift.clocks warning"});
  for (const auto& f : report["findings"]) {
    if (f["id"] != "drift.clocks") continue;
    EXPECT_EQ(f["gpu"]["index"], 3);
    const std::string why = f["explanation"];
    EXPECT_TRUE(
        why.starts_with("GPU 3 application clocks (graphics/memory MHz) 1755/2619 here, "
                        "1980/2619 in the baseline: "))
        << why;
    EXPECT_NE(why.find("below its own default (1980/2619)"), std::string::npos) << why;
    EXPECT_NE(f["actions"][0].get<std::string>().find("nvidia-smi -i 3 -ac 2619,1980"),
              std::string::npos)
        << f["actions"];
  }
}

TEST(BaselineCli, BadFilesAreUsageErrorsNamingFileAndField) {
  cardiac::testing::TempDir dir;
  const std::string bad = dir.path() + "/bad.json";
  std::ofstream(bad)
      << R"({"schema": "cardiac.baseline/v1", "facts": [{"key": "driver", "value": 550}]})";
  auto r = run_cardiac({"doctor", "--offline", "--quiet", "--baseline", bad, "--root", kNode01});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad + ": facts[0].value: expected a string or null, got number"),
            std::string::npos)
      << r.err;
  auto show = run_cardiac({"baseline", "show", bad});
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_NE(show.err.find(bad + ": facts[0].value"), std::string::npos) << show.err;

  const std::string old = dir.path() + "/old.json";
  std::ofstream(old) << R"({"schema": "cardiac.baseline/v0", "facts": []})";
  auto v = run_cardiac({"baseline", "show", old});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find(old + ": schema: expected \"cardiac.baseline/v1\""), std::string::npos)
      << v.err;

  auto missing = run_cardiac({"baseline", "show", dir.path() + "/none.json"});
  EXPECT_EQ(missing.exit_code, 3);
  auto no_tree =
      run_cardiac({"baseline", "capture", "-o", "-", "--offline", "--root", kBaselineFixtures});
  EXPECT_EQ(no_tree.exit_code, 2) << no_tree.err;
}

}  // namespace
}  // namespace cardiac::e2e
