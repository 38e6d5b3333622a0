// SPDX-License-Identifier: Apache-2.0
#include "simserve/workload.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace cardiac::simserve {
namespace {

std::vector<ServiceClass> one() {
  return {ServiceClass{"default", 1, std::nullopt, std::nullopt}};
}

TEST(ServeLength, ParsesTheThreeForms) {
  auto f = parse_length("512", "--prompt-len");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, LengthDist::Kind::kFixed);
  EXPECT_EQ(f->max(), 512);
  auto u = parse_length("uniform:10:20", "--prompt-len");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->max(), 20);
  auto l = parse_length("lognormal:200:2048:0.5", "--output-len");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->kind, LengthDist::Kind::kLognormal);
  EXPECT_EQ(l->sigma, 0.5);
  EXPECT_EQ(l->max(), 2048);
}

TEST(ServeLength, RefusesBadFormsNamingTheFlag) {
  for (const char* bad : {"0", "x", "uniform:20:10", "uniform:1", "lognormal:300:200",
                          "lognormal:200:2048:9", "zipf:1:2", "fixed:1.5"}) {
    auto r = parse_length(bad, "--output-len");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().what().find("--output-len"), std::string::npos) << r.error().what();
  }
}

TEST(ServeWorkload, PoissonRateAndLengthsMatchTheirParameters) {
  PoissonWorkload w;
  w.rate = 50;
  w.requests = 200000;
  w.prompt = *parse_length("uniform:100:300", "p");
  w.output = *parse_length("lognormal:200:100000:0.5", "o");
  auto reqs = generate(w, one());
  ASSERT_EQ(reqs.size(), 200000u);
  EXPECT_NEAR(reqs.back().arrival, 200000 / 50.0, 200000 / 50.0 * 0.01);
  double prompt = 0;
  double output = 0;
  for (const auto& r : reqs) {
    ASSERT_GE(r.prompt, 100);
    ASSERT_LE(r.prompt, 300);
    prompt += r.prompt;
    output += r.output;
  }
  EXPECT_NEAR(prompt / 200000, 200, 1);
  // Far from the clip, the lognormal's mean is the one asked for.
  EXPECT_NEAR(output / 200000, 200, 2);
  EXPECT_TRUE(std::ranges::is_sorted(reqs, {}, &Request::arrival));
}

TEST(ServeWorkload, ClassesFollowTheirShares) {
  auto a = parse_class("interactive:0.2:ttft=500ms:tpot=50ms");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "interactive");
  EXPECT_DOUBLE_EQ(*a->ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(*a->tpot_s, 0.05);
  auto b = parse_class("batch:0.8");
  ASSERT_TRUE(b);
  PoissonWorkload w;
  w.requests = 50000;
  w.prompt = w.output = *parse_length("10", "x");
  auto reqs = generate(w, {*a, *b});
  const auto first = std::ranges::count_if(reqs, [](const Request& r) { return r.cls == 0; });
  EXPECT_NEAR(static_cast<double>(first) / 50000, 0.2, 0.01);
  for (const char* bad : {"x", "x:0", "x:1:ttft", "x:1:ttft=soon", "x:1:slo=1s", ":1"}) {
    EXPECT_FALSE(parse_class(bad)) << bad;
  }
}

TEST(ServeTrace, ReadsRowsSkipsHeaderAndCommentsAndSorts) {
  auto r =
      parse_trace("arrival,prompt_tokens,output_tokens\n# a comment\n2.5,100,20\n\n0.5, 300 ,1\n",
                  "t.csv", one(), 1);
  ASSERT_TRUE(r) << r.error().what();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].arrival, 0.5);
  EXPECT_EQ((*r)[0].prompt, 300);
  EXPECT_EQ((*r)[1].output, 20);
}

TEST(ServeTrace, ErrorsNameFileLineAndField) {
  const std::vector<ServiceClass> two = {*parse_class("a:1"), *parse_class("b:1")};
  struct Case {
    const char* text;
    const char* where;
  };
  for (const Case& c :
       {Case{"0,1,1\n1,2\n", "t.csv:2:output_tokens"}, Case{"0,1,1\n-1,2,3\n", "t.csv:2:arrival"},
        Case{"0,1,1\n1,x,3\n", "t.csv:2:prompt_tokens"},
        Case{"0,1,1\n1,2,0\n", "t.csv:2:output_tokens"},
        Case{"0,1,1\n1,2,2.5\n", "t.csv:2:output_tokens"},
        Case{"0,1,1,a\n\n1,2,3,c\n", "t.csv:3:class"},
        Case{"0,1,1\n1,2,3,4,5\n", "t.csv:2:class"}}) {
    auto r = parse_trace(c.text, "t.csv", two, 1);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().what().find(c.where), std::string::npos)
        << c.text << " -> " << r.error().what();
  }
  EXPECT_FALSE(parse_trace("arrival,prompt,output\n", "t.csv", one(), 1));
  auto missing = load_trace("/nonexistent/trace.csv", one(), 1);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().what().find("/nonexistent/trace.csv"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::simserve
