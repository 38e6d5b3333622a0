// SPDX-License-Identifier: Apache-2.0
// The SVG helper the reports share: attributes in the order given, values and text escaped.
#include "core/svg.h"

#include <gtest/gtest.h>

namespace cardiac::svg {
namespace {

TEST(Svg, ElementsKeepAttributeOrderAndEscapeEverything) {
  EXPECT_EQ(element("line", {{"x1", 60}, {"y1", num(31.25)}, {"stroke", "#999"}}),
            "<line x1=\"60\" y1=\"31.2\" stroke=\"#999\"/>");
  EXPECT_EQ(element("text", {{"aria-label", "a\"b<c>"}}, "x < y & \"z\""),
            "<text aria-label=\"a&quot;b&lt;c&gt;\">x &lt; y &amp; &quot;z&quot;</text>");
  EXPECT_EQ(open("circle", {{"r", 4}, {"fill-opacity", "0.75"}}) + close("circle"),
            "<circle r=\"4\" fill-opacity=\"0.75\"></circle>");
  EXPECT_EQ(element("title", {}, "\x1b[0m"), "<title>\xEF\xBF\xBD[0m</title>");
}

TEST(Svg, NumbersAndScale) {
  EXPECT_EQ(num(126), "126.0");
  EXPECT_EQ(num(99.56), "99.6");
  EXPECT_EQ(Attr("w", 400.0).value, "400");
  EXPECT_EQ(Attr("w", 0.5).value, "0.5");
  const Scale down{0, 10, 100, 0};  // a y axis: larger values higher up
  EXPECT_DOUBLE_EQ(down.at(0), 100);
  EXPECT_DOUBLE_EQ(down.at(10), 0);
  EXPECT_DOUBLE_EQ(down.at(2.5), 75);
  const Scale flat{5, 5, 20, 40};
  EXPECT_DOUBLE_EQ(flat.at(5), 30);
}

}  // namespace
}  // namespace cardiac::svg
