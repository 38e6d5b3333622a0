// SPDX-License-Identifier: Apache-2.0
// Tests for silence matcher parsing and matching.
#include "alerts/silence.h"

#include <gtest/gtest.h>

namespace cardiac::alerts {
namespace {

std::string parse_error(std::string_view text) {
  auto m = parse_matchers(text);
  EXPECT_FALSE(m) << text;
  return m ? std::string() : m.error().what();
}

TEST(AlertsSilence, ParsesPairsAndNormalisesAlertname) {
  auto m = parse_matchers(" alertname = gpu_hot , gpu=0,mount=/data ");
  ASSERT_TRUE(m) << m.error().what();
  const Matchers want = {{"rule", "gpu_hot"}, {"gpu", "0"}, {"mount", "/data"}};
  EXPECT_EQ(*m, want);
  EXPECT_EQ(matchers_text(*m), "rule=gpu_hot,gpu=0,mount=/data");
  EXPECT_EQ(parse_matchers(matchers_text(*m)).value(), want);
  EXPECT_EQ(matchers_from_json(matchers_to_json(*m)).value(), want);
}

TEST(AlertsSilence, BadMatcherNamesTheBadPart) {
  EXPECT_NE(parse_error("").find("empty"), std::string::npos);
  std::string e = parse_error("rule=x,gpu");
  EXPECT_NE(e.find("\"gpu\""), std::string::npos) << e;
  EXPECT_NE(e.find("key=value"), std::string::npos) << e;
  e = parse_error("gpu=~0|1");
  EXPECT_NE(e.find("gpu=~0|1"), std::string::npos) << e;
  EXPECT_NE(e.find("regex"), std::string::npos) << e;
  EXPECT_NE(parse_error("gpu!=0").find("!="), std::string::npos);
  EXPECT_NE(parse_error("rule=a,,gpu=0").find("empty part"), std::string::npos);
  EXPECT_NE(parse_error("gpu=").find("empty value"), std::string::npos);
  EXPECT_NE(parse_error("rule=a,alertname=b").find("twice"), std::string::npos);
  EXPECT_NE(parse_error("g pu=1").find("\"g pu=1\""), std::string::npos);
  EXPECT_EQ(parse_matchers("x").error().code, ErrorCode::kParse);
}

TEST(AlertsSilence, MatchesRuleSeverityAndLabels) {
  const rules::Labels labels = {{"gpu", "1"}, {"uuid", "GPU-1"}};
  const Matchers m = parse_matchers("rule=gpu_hot,gpu=1").value();
  EXPECT_TRUE(matches(m, "gpu_hot", "warning", labels));
  EXPECT_FALSE(matches(m, "gpu_cold", "warning", labels));
  EXPECT_FALSE(matches(m, "gpu_hot", "warning", {{"gpu", "0"}}));
  EXPECT_FALSE(matches(m, "gpu_hot", "warning", {}));
  const Matchers sev = parse_matchers("severity=critical").value();
  EXPECT_TRUE(matches(sev, "any", "critical", {}));
  EXPECT_FALSE(matches(sev, "any", "warning", {}));
}

TEST(AlertsSilence, ActiveSpanIsHalfOpen) {
  Silence s;
  s.starts_ns = 10;
  s.ends_ns = 20;
  EXPECT_FALSE(s.active(9));
  EXPECT_TRUE(s.active(10));
  EXPECT_TRUE(s.active(19));
  EXPECT_FALSE(s.active(20));
}

}  // namespace
}  // namespace cardiac::alerts
