// SPDX-License-Identifier: Apache-2.0
#include "plan/html.h"

#include <gtest/gtest.h>

namespace cardiac::plan {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Html, OneBarPerContextRedWhereItStopsFitting) {
  HtmlPlan p;
  p.title = "<Llama> & co";
  p.verdict = "FITS";
  p.options.concurrency = 32;
  GpuMemory gpu{"x", 80ULL << 30, 80ULL << 30};
  const ModelSpec m = *find_preset("Llama-3.1-8B");
  p.memory = plan_inference(m, p.options, gpu);
  p.growth = growth_curve(m, p.options, gpu);
  const std::string h = render_html(p);
  EXPECT_EQ(count(h, "<rect "), p.growth.size());
  EXPECT_EQ(count(h, "fill=\"#c44\""), 2U);  // 32,768 and 131,072 tokens × 32 do not fit
  EXPECT_NE(h.find("&lt;Llama&gt; &amp; co"), std::string::npos);  // escaped
  EXPECT_EQ(h.find("<Llama>"), std::string::npos);
  EXPECT_NE(h.find("need 32"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::plan
