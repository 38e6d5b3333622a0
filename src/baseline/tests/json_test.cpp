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
