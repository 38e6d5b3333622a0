// SPDX-License-Identifier: Apache-2.0
// Cross-check plans in the human forms: an outcome reads as a sentence after "If", and the
// parts every suspect card's plan shares (physical checks, the room) are printed once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "doctor/checks/checks.h"
#include "doctor/render/render.h"

namespace cardiac::doctor {
namespace {

Finding suspect(unsigned index, const std::string& bus, const std::string& serial) {
  Finding f;
  f.id = "xid.79";
  f.category = Category::kHardware;
  f.severity = Severity::kCritical;
  f.gpu.index = index;
  f.gpu.pci_bus_id = bus;
  f.gpu.serial = serial;
  f.title = "GPU fell off the bus (Xid 79)";
  return f;
}

Report two_suspects() {
  Report r;
  r.findings = {suspect(1, "0000:2a:00.0", "1654922001251"),
                suspect(2, "0000:3a:00.0", "1654922001268")};
  add_cross_check_plans(r.findings);
  return r;
}

std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

TEST(CrossCheckText, OutcomesReadAsASentenceAfterIf) {
  const std::string t = render_text(two_suspects(), false);
  EXPECT_NE(t.find("If the fault follows the card"), std::string::npos) << t;
  EXPECT_NE(t.find("If both work:"), std::string::npos) << t;
  EXPECT_EQ(t.find("If The "), std::string::npos) << t;
  EXPECT_EQ(t.find("If Both "), std::string::npos) << t;
  EXPECT_EQ(detail::lower_first("PCIe link"), "PCIe link");
  EXPECT_EQ(detail::lower_first("GPU"), "GPU");
  EXPECT_EQ(detail::lower_first(""), "");
}

TEST(CrossCheckText, SharedPartsOfThePlansArePrintedOnce) {
  const Report r = two_suspects();
  ASSERT_TRUE(r.findings[0].cross_check && r.findings[1].cross_check);
  const std::string t = render_text(r, false);
  EXPECT_EQ(count(t, "Cross-check:"), 2U) << t;
  EXPECT_EQ(count(t, "Check: Power cables"), 1U) << t;
  EXPECT_EQ(count(t, "Room: "), 1U) << t;
  EXPECT_EQ(count(t, "as in the first cross-check above"), 1U) << t;
  // Each card's own steps are still there: its serial.
  EXPECT_NE(t.find("1654922001251"), std::string::npos);
  EXPECT_NE(t.find("1654922001268"), std::string::npos);

  const std::string md = render_markdown(r);
  EXPECT_EQ(count(md, "Physical checks:"), 1U) << md;
  EXPECT_EQ(count(md, "as in the first cross-check above"), 1U) << md;
  const std::string html = render_html(r);
  EXPECT_EQ(count(html, "<h5>Physical checks</h5>"), 1U);
  EXPECT_EQ(count(html, "as in the first cross-check above"), 1U);
  // The JSON keeps every plan whole.
  const auto j = to_json(r);
  EXPECT_EQ(j["findings"][0]["cross_check"]["physical_checks"],
            j["findings"][1]["cross_check"]["physical_checks"]);
}

TEST(CrossCheckText, AnIdenticalPlanIsPrintedOnce) {
  Report r = two_suspects();
  r.findings[1].cross_check = r.findings[0].cross_check;
  const std::string t = render_text(r, false);
  EXPECT_EQ(count(t, "1. Note the suspect card"), 1U) << t;
  EXPECT_EQ(count(t, "the same plan as the first one above"), 1U) << t;
  EXPECT_EQ(count(render_markdown(r), "the same plan as the first one above"), 1U);
  EXPECT_EQ(count(render_html(r), "the same plan as the first one above"), 1U);
}

}  // namespace
}  // namespace cardiac::doctor
