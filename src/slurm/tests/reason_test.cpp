// SPDX-License-Identifier: Apache-2.0
#include "slurm/reason.h"

#include <gtest/gtest.h>

namespace cardiac::slurm {
namespace {

TEST(SlurmReason, CarriesThePrefixOnOneLine) {
  EXPECT_EQ(make_reason("GPU 3 (0000:3b:00.0): Xid 79 fell off the bus"),
            "cardiac: GPU 3 (0000:3b:00.0): Xid 79 fell off the bus");
  EXPECT_EQ(make_reason("  a\n\"quoted\"\tb  "), "cardiac: a quoted b");
}

TEST(SlurmReason, LongTextIsCutOnACharacterBoundary) {
  std::string text(300, 'x');
  text.replace(180, 3, "\xe2\x80\xa6");  // a three-byte character near the cut
  std::string r = make_reason(text);
  EXPECT_LE(r.size(), kMaxReasonBytes);
  EXPECT_TRUE(r.ends_with("…"));
  EXPECT_TRUE(is_cardiac_reason(r));
}

TEST(SlurmReason, RecognisesOnlyItsOwn) {
  EXPECT_TRUE(is_cardiac_reason("cardiac: GPU 5 lost"));
  EXPECT_FALSE(is_cardiac_reason("maintenance"));
  EXPECT_FALSE(is_cardiac_reason("Prolog error"));
  EXPECT_FALSE(is_cardiac_reason("cardiac rack swap"));  // a person's words, not our prefix
  EXPECT_FALSE(is_cardiac_reason(""));
}

}  // namespace
}  // namespace cardiac::slurm
