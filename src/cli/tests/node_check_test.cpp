// SPDX-License-Identifier: Apache-2.0
// How a status document and the agent's alerts become one node check: what counts, in which
// order, when the answer is unknown, and how messages are cut for node-problem-detector.
#include <gtest/gtest.h>

#include "cli/node_check.h"

namespace cardiac::cli {
namespace {

nlohmann::json status_with(const nlohmann::json& gpus) {
  return {{"schema", "cardiac.status/v1"},
          {"verdict", "FAIL"},
          {"nvml", {{"available", true}}},
          {"inventory", {{"verdict", "OK"}, {"reasons", nlohmann::json::array()}}},
          {"gpus", gpus},
          {"host", {{"verdict", "OK"}, {"reasons", nlohmann::json::array()}}}};
}

nlohmann::json gpu(unsigned index, const std::string& verdict, const nlohmann::json& reasons) {
  return {{"index", index},
          {"pci_bus_id", "0000:1" + std::to_string(index) + ":00.0"},
          {"verdict", verdict},
          {"reasons", reasons}};
}

TEST(NodeCheck, FailsComeFirstAndEveryGpuCounts) {
  auto s = status_with(
      {gpu(0, "WARN", {{{"level", "WARN"}, {"code", "hw_thermal_slowdown"}, {"text", "hot"}}}),
       gpu(1, "OK", nlohmann::json::array()),
       gpu(2, "FAIL", {{{"level", "FAIL"}, {"code", "gpu_lost"}, {"text", "lost"}}})});
  auto c = judge_status_json(s, nlohmann::json::array());
  ASSERT_TRUE(c.level);
  EXPECT_EQ(*c.level, health::Level::kFail);
  EXPECT_EQ(c.gpus, 3u);
  EXPECT_EQ(c.gpus_ok, 1u);
  ASSERT_EQ(c.problems.size(), 2u);
  EXPECT_EQ(c.problems[0].text, "GPU 2 (0000:12:00.0): lost");
  EXPECT_EQ(c.problems[0].gpu, 2u);
  EXPECT_EQ(c.problems[1].code, "hw_thermal_slowdown");
  EXPECT_EQ(summary_line(c), "GPU 2 (0000:12:00.0): lost; 1 more problem");
}

TEST(NodeCheck, FiringUnsilencedAlertsCountAndXidRulesAreMarked) {
  auto s = status_with({gpu(0, "OK", nlohmann::json::array())});
  nlohmann::json alerts = {{{"rule", "gpu_fallen_off_bus"},
                            {"state", "firing"},
                            {"severity", "critical"},
                            {"silenced", false},
                            {"labels", {{"gpu", "0"}}},
                            {"description", "GPU 0 fell off"}},
                           {{"rule", "gpu_memory_nearly_full"},
                            {"state", "firing"},
                            {"severity", "warning"},
                            {"silenced", true},
                            {"labels", {{"gpu", "0"}}},
                            {"description", "silenced"}},
                           {{"rule", "gpu_ecc_uncorrected"},
                            {"state", "pending"},
                            {"severity", "critical"},
                            {"silenced", false},
                            {"description", "not yet"}},
                           {{"rule", "gpu_allocated_but_idle"},
                            {"state", "firing"},
                            {"severity", "info"},
                            {"silenced", false},
                            {"description", "info only"}}};
  auto c = judge_status_json(s, alerts);
  ASSERT_TRUE(c.level);
  EXPECT_EQ(*c.level, health::Level::kFail);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_TRUE(c.problems[0].xid);
  EXPECT_EQ(c.problems[0].gpu, 0u);
  EXPECT_EQ(c.problems[0].text, "GPU 0 fell off");
}

TEST(NodeCheck, NoSampleOrNoDriverIsUnknownButABrokenDriverIsAFinding) {
  auto none = judge_status_json({{"verdict", "UNKNOWN"}, {"message", "no sample yet"}},
                                nlohmann::json::array());
  EXPECT_FALSE(none.level);
  EXPECT_EQ(none.unknown, "no sample yet");

  auto s = status_with(nlohmann::json::array());
  s["verdict"] = "OK";
  s["nvml"] = {{"available", false}, {"error_kind", "library_not_found"}, {"error", "no lib"}};
  s["inventory"]["reasons"] = {{{"level", "OK"}, {"code", "no_nvidia_gpu"}, {"text", "none"}}};
  auto unknown = judge_status_json(s, nlohmann::json::array());
  EXPECT_FALSE(unknown.level);
  EXPECT_EQ(unknown.unknown, "NVML unavailable (library_not_found): no lib");

  s["inventory"] = {{"verdict", "FAIL"},
                    {"reasons",
                     {{{"level", "FAIL"},
                       {"code", "nvml_library_not_found"},
                       {"text", "no lib (2 NVIDIA GPU(s) on the PCI bus)"}}}}};
  auto broken = judge_status_json(s, nlohmann::json::array());
  ASSERT_TRUE(broken.level);
  EXPECT_EQ(*broken.level, health::Level::kFail);
}

TEST(NodeCheck, MessagesAreCutOnACharacterBoundary) {
  EXPECT_EQ(fit_message("short", 80), "short");
  EXPECT_EQ(fit_message("0123456789", 0), "0123456789");
  // "°" is two bytes: the cut backs up rather than splitting it.
  const std::string s = "GPU 1 at 88 °C, slowing down";
  const std::string cut = fit_message(s, 16);  // 13 bytes of text would end inside "°"
  EXPECT_LE(cut.size(), 16u);
  EXPECT_EQ(cut, "GPU 1 at 88 …");
  EXPECT_EQ(fit_message(std::string(100, 'x'), 10), std::string(7, 'x') + "…");
}

}  // namespace
}  // namespace cardiac::cli
