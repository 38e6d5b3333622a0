// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "baseline/json.h"

namespace cardiac::baseline {
namespace {

std::string error_of(const std::string& text) {
  auto b = parse_baseline(text, "base.json");
  EXPECT_FALSE(b.has_value()) << text;
  return b ? std::string() : b.error().what();
}

TEST(BaselineJson, RoundTrip) {
  RootFs fs(CARDIAC_FIXTURES_DIR "/hosts/debian-gpu-8x");
  Baseline b = capture(fs, nullptr, 1'700'000'000'123'000'000);
  auto text = to_json(b).dump(2);
  auto back = parse_baseline(text, "base.json");
  ASSERT_TRUE(back.has_value()) << back.error().what();
  EXPECT_EQ(*back, b);
  EXPECT_EQ(to_json(*back).dump(2), text);
  // An unread fact is null with the reason as its source.
  auto j = nlohmann::json::parse(text);
  bool saw_null = false;
  for (const auto& f : j["facts"]) {
    if (f["key"] == "cuda") {
      EXPECT_TRUE(f["value"].is_null());
      saw_null = true;
    }
  }
  EXPECT_TRUE(saw_null);
  EXPECT_NE(render_text(b).find("library.nccl"), std::string::npos);
}

// `baseline show` prints the application clocks like any fact; a file written before they were
// captured still reads and shows what it has.
TEST(BaselineJson, ApplicationClocksShownAndOldFilesWithoutThemRead) {
  RootFs fs(CARDIAC_FIXTURES_DIR "/hosts/debian-gpu-8x");
  nvml::GpuSnapshot gpus;
  gpus.available = true;
  nvml::GpuReading g;
  g.name = "NVIDIA H100 80GB HBM3";
  g.pci_bus_id = "0000:18:00.0";
  g.app_clock_graphics_mhz = 1755;
  g.app_clock_memory_mhz = 2619;
  g.default_app_clock_graphics_mhz = 1980;
  g.default_app_clock_memory_mhz = 2619;
  gpus.gpus.push_back(g);
  Baseline b = capture(fs, &gpus, 0);
  auto back = parse_baseline(to_json(b).dump(2), "base.json");
  ASSERT_TRUE(back.has_value()) << back.error().what();
  EXPECT_EQ(*back, b);
  // One line per fact: the key, padding, the value.
  auto line_of = [](const std::string& text, const std::string& key) {
    auto at = text.find("  " + key + " ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  const std::string text = render_text(*back);
  EXPECT_TRUE(line_of(text, "gpu.0.app_clocks").ends_with(" 1755/2619")) << text;
  EXPECT_TRUE(line_of(text, "gpu.0.app_clocks_default").ends_with(" 1980/2619")) << text;

  auto old = parse_baseline(R"({"schema": "cardiac.baseline/v1", "hostname": "gpu-node-01",
      "facts": [{"key": "gpu.0.clocks_max", "value": "1980/2619", "family": "clocks",
                 "severity": "warning", "source": "nvml", "risk": "x"}]})",
                            "old.json");
  ASSERT_TRUE(old.has_value()) << old.error().what();
  EXPECT_EQ(old->find("gpu.0.app_clocks"), nullptr);
  EXPECT_TRUE(line_of(render_text(*old), "gpu.0.clocks_max").ends_with(" 1980/2619"));
  EXPECT_EQ(render_text(*old).find("app_clocks"), std::string::npos);
}

TEST(BaselineJson, TheFileMayTuneSeverityAndRisk) {
  auto b = parse_baseline(R"({"schema": "cardiac.baseline/v1", "facts": [
      {"key": "os", "value": "debian 12", "severity": "critical", "risk": "we certify one OS"}]})",
                          "base.json");
  ASSERT_TRUE(b.has_value()) << b.error().what();
  EXPECT_EQ(b->facts[0].severity, Severity::kCritical);
  EXPECT_EQ(b->facts[0].risk, "we certify one OS");
  EXPECT_EQ(b->facts[0].family, "os");
}

TEST(BaselineJson, ErrorsNameTheFileAndTheField) {
  EXPECT_EQ(error_of("{"), "base.json: not JSON");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v2", "facts": []})"),
            "base.json: schema: expected \"cardiac.baseline/v1\", got \"cardiac.baseline/v2\"");
  EXPECT_EQ(error_of(R"({"facts": []})"), "base.json: schema: missing");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1"})"), "base.json: facts: missing");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": {}})"),
            "base.json: facts: expected an array, got object");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": [{"key": "os"}]})"),
            "base.json: facts[0].value: missing (null when it could not be read)");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": [
                {"key": "os", "value": "x"}, {"value": "1"}]})"),
            "base.json: facts[1].key: missing");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": [{"key": "os", "value": 12}]})"),
            "base.json: facts[0].value: expected a string or null, got number");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": [
                {"key": "os", "value": "x", "severity": "bad"}]})"),
            "base.json: facts[0].severity: 'bad' is not info, warning or critical");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": [
                {"key": "os", "value": "x", "risk": 3}]})"),
            "base.json: facts[0].risk: expected a string, got number");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "taken_at_ns": "now", "facts": []})"),
            "base.json: taken_at_ns: expected an integer, got string");
  EXPECT_EQ(error_of(R"({"schema": "cardiac.baseline/v1", "facts": [
                {"key": "os", "value": "x"}, {"key": "os", "value": "y"}]})"),
            "base.json: facts[1].key: 'os' appears twice");
}

TEST(BaselineJson, MissingFile) {
  auto b = load_baseline("/nonexistent/base.json");
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().what().find("/nonexistent/base.json"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::baseline
