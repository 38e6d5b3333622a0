// SPDX-License-Identifier: Apache-2.0
// `cardiac doctor` end to end on a fail-slow card: the binary over the fake NVML samples a busy
// node in which one GPU lags its peers (gpu.fail_slow); the healthy node has none.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

nlohmann::json doctor_over(const std::string& scenario) {
  // A few samples, 100 ms apart: the check wants the lag in most of at least three.
  auto r = run_cardiac({"doctor", "--json", "--nvml-lib", FAKE_NVML_PATH, "--root",
                        std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x", "--window",
                        "400ms", "--interval", "100ms", "--quiet", "--no-kmsg", "--no-probe"},
                       {scenario_env(scenario)});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

// The findings with this id, by GPU index.
std::vector<nlohmann::json> fail_slow(const nlohmann::json& j) {
  std::vector<nlohmann::json> out;
  if (!j.is_object() || !j.contains("findings")) return out;
  for (const auto& f : j["findings"]) {
    if (f["id"] == "gpu.fail_slow") out.push_back(f);
  }
  return out;
}

TEST(DoctorPeers, FailSlowGpuAgainstItsPeers) {
  const auto slow = fail_slow(doctor_over("fail-slow.json"));
  ASSERT_EQ(slow.size(), 1u);
  const auto& f = slow.front();
  EXPECT_EQ(f["gpu"]["index"], 2);
  EXPECT_EQ(f["severity"], "warning");
  EXPECT_EQ(f["category"], "hardware");
  EXPECT_NE(f["title"].get<std::string>().find("1140 MHz"), std::string::npos) << f["title"];
  EXPECT_NE(f["title"].get<std::string>().find("1980 MHz"), std::string::npos) << f["title"];
  EXPECT_NE(f["explanation"].get<std::string>().find("hidden"), std::string::npos);
  // The healthy node's idle GPUs sit at 345 MHz: idle, not slow.
  EXPECT_TRUE(fail_slow(doctor_over("healthy-8xh100.json")).empty());
}

}  // namespace
}  // namespace cardiac::e2e
