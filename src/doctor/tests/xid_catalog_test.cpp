// SPDX-License-Identifier: Apache-2.0
// Tests for the Xid catalog: coverage of the reference table, the doctor's classes, lookups.
#include "doctor/checks/xid_catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cardiac::doctor {
namespace {

// Every code of shared/reference/xid-and-kmsg.md section 7, ranges expanded.
const int kReferenceCodes[] = {8,   13,  31,  32,  38,  43,  45,  46,  48,  54,  61,  62,
                               63,  64,  74,  79,  92,  93,  94,  95,  109, 119, 120, 121,
                               136, 137, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154,
                               155, 156, 157, 158, 162, 163, 164, 165, 167, 171, 172};

TEST(XidCatalog, CoversEveryReferenceCode) {
  for (int code : kReferenceCodes) {
    XidInfo x = lookup_xid(code);
    EXPECT_TRUE(x.known) << code;
    EXPECT_EQ(x.code, code);
    EXPECT_FALSE(x.meaning.empty()) << code;
    EXPECT_FALSE(x.cause.empty()) << code;
  }
  EXPECT_EQ(xid_catalog().size(), std::size(kReferenceCodes));
}

TEST(XidCatalog, TableIsSortedAndUnique) {
  int last = 0;
  for (const auto& x : xid_catalog()) {
    EXPECT_GT(x.code, last);
    last = x.code;
  }
}

TEST(XidCatalog, EveryActionableEntryHasAFirstStep) {
  for (const auto& x : xid_catalog()) {
    if (x.action == XidAction::kIgnore && x.severity == Severity::kInfo) continue;
    EXPECT_FALSE(x.steps[0].empty()) << x.code;
    // Steps are filled in order: no gap before a later step.
    if (x.steps[1].empty()) {
      EXPECT_TRUE(x.steps[2].empty()) << x.code;
    }
  }
}

TEST(XidCatalog, PlaceholdersAreOnlyGpuAndId) {
  for (const auto& x : xid_catalog()) {
    for (auto s : x.steps) {
      for (auto p = s.find('{'); p != std::string_view::npos; p = s.find('{', p + 1)) {
        auto rest = s.substr(p);
        EXPECT_TRUE(rest.substr(0, 5) == "{gpu}" || rest.substr(0, 4) == "{id}")
            << x.code << ": " << s;
      }
    }
  }
}

TEST(XidCatalog, CardSuspects) {
  for (int code : {48, 62, 64, 74, 79, 95, 119, 120, 140, 143}) {
    EXPECT_TRUE(lookup_xid(code).suspect_card) << code;
    EXPECT_EQ(lookup_xid(code).severity, Severity::kCritical) << code;
  }
  for (int code : {13, 31, 43, 45, 63, 94, 154}) {
    EXPECT_FALSE(lookup_xid(code).suspect_card) << code;
  }
}

TEST(XidCatalog, DoctorClasses) {
  XidInfo x79 = lookup_xid(79);
  EXPECT_EQ(x79.category, Category::kHardware);
  EXPECT_EQ(x79.action, XidAction::kReboot);

  XidInfo x94 = lookup_xid(94);
  EXPECT_EQ(x94.severity, Severity::kWarning);
  EXPECT_EQ(x94.action, XidAction::kRestartApp);
  EXPECT_TRUE(x94.suspect_on_repeat);

  XidInfo x48 = lookup_xid(48);
  EXPECT_EQ(x48.category, Category::kHardware);
  EXPECT_EQ(x48.action, XidAction::kInspectHardware);

  XidInfo x119 = lookup_xid(119);
  EXPECT_EQ(x119.category, Category::kDriver);
  EXPECT_EQ(x119.action, XidAction::kResetGpu);

  for (int code : {13, 31, 43}) {
    EXPECT_TRUE(lookup_xid(code).app_error) << code;
    EXPECT_EQ(lookup_xid(code).action, XidAction::kCheckApp) << code;
    EXPECT_EQ(lookup_xid(code).category, Category::kDriver) << code;
  }
  for (int code : {45, 154}) {
    EXPECT_TRUE(lookup_xid(code).follow_on) << code;
    EXPECT_EQ(lookup_xid(code).action, XidAction::kFollowOther) << code;
    EXPECT_EQ(lookup_xid(code).severity, Severity::kInfo) << code;
  }
  EXPECT_EQ(lookup_xid(54).action, XidAction::kCheckMechanicals);
  EXPECT_EQ(lookup_xid(63).severity, Severity::kInfo);
  EXPECT_EQ(lookup_xid(162).action, XidAction::kIgnore);
}

TEST(XidCatalog, UnknownCodeGetsAGenericEntry) {
  for (int code : {0, 14, 999, 100000}) {
    XidInfo x = lookup_xid(code);
    EXPECT_FALSE(x.known) << code;
    EXPECT_EQ(x.code, code);
    EXPECT_EQ(x.severity, Severity::kWarning);
    EXPECT_EQ(x.category, Category::kDriver);
    EXPECT_EQ(x.action, XidAction::kInvestigate);
    EXPECT_NE(std::string(x.steps[0]).find("Xid catalog"), std::string::npos);
  }
}

TEST(XidCatalog, ActionNamesAreDistinct) {
  std::set<std::string_view> names;
  for (auto a : {XidAction::kIgnore, XidAction::kCheckApp, XidAction::kRestartApp,
                 XidAction::kResetGpu, XidAction::kReboot, XidAction::kInspectHardware,
                 XidAction::kCheckMechanicals, XidAction::kFollowOther, XidAction::kInvestigate}) {
    names.insert(xid_action_name(a));
  }
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(xid_action_name(XidAction::kResetGpu), "reset_gpu");
}

}  // namespace
}  // namespace cardiac::doctor
