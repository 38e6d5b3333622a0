// SPDX-License-Identifier: Apache-2.0
#include "serving/prom_text.h"

#include <cmath>

#include <gtest/gtest.h>

#include "serving/tests/vllm_metrics.h"

namespace cardiac::serving {
namespace {

TEST(PromText, ReadsAVllmExposition) {
  auto s = parse_prom_text(testing::vllm_metrics(0.42, 3, 7, 11), "vllm");
  ASSERT_TRUE(s) << s.error().what();
  ASSERT_EQ(s->size(), 9U);
  EXPECT_EQ((*s)[0].name, "vllm:num_requests_running");
  EXPECT_EQ((*s)[0].labels.at("model_name"), "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_DOUBLE_EQ((*s)[0].value, 7);
  EXPECT_DOUBLE_EQ((*s)[2].value, 0.42);
  EXPECT_EQ((*s)[5].labels.at("le"), "+Inf");
  EXPECT_DOUBLE_EQ(s->back().value, 2147483648.0);
}

TEST(PromText, EscapesSpecialValuesAndTimestamps) {
  auto s = parse_prom_text(
      "a{x=\"q\\\"uote\\\\ \\n\",y=\"\"} NaN\nb +Inf 1700000000000\nc{} -Inf\r\n  \n# c\nd 1e-3\n",
      "t");
  ASSERT_TRUE(s) << s.error().what();
  ASSERT_EQ(s->size(), 4U);
  EXPECT_EQ((*s)[0].labels.at("x"), "q\"uote\\ \n");
  EXPECT_TRUE(std::isnan((*s)[0].value));
  EXPECT_TRUE(std::isinf((*s)[1].value));
  EXPECT_LT((*s)[2].value, 0);
  EXPECT_DOUBLE_EQ((*s)[3].value, 0.001);
}

TEST(PromText, ErrorsNameTheLine) {
  for (const char* bad : {"ok 1\n{x=\"1\"} 2\n", "ok 1\nm{x=1} 2\n", "ok 1\nm{x=\"1\" 2\n",
                          "ok 1\nm abc\n", "ok 1\nm\n", "ok 1\nm 1 2 3\n", "ok 1\nm{x=\"1} 2\n"}) {
    auto s = parse_prom_text(bad, "http://h/metrics");
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.error().what().find("http://h/metrics:2"), std::string::npos) << s.error().what();
  }
}

}  // namespace
}  // namespace cardiac::serving
