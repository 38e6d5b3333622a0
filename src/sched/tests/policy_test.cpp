// SPDX-License-Identifier: Apache-2.0
// Tests for parse_policy and policy_text.
#include <gtest/gtest.h>

#include "sched/sched.h"

namespace cardiac::sched {
namespace {

TEST(ParsePolicy, PlainNamesKeepTheirOwnOrder) {
  for (const char* name : {"fcfs", "priority", "fairshare", "sjf", "las"}) {
    auto p = parse_policy(name);
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(p->name, name);
    EXPECT_EQ(p->base, name);
    EXPECT_EQ(policy_text(*p), name);
  }
}

TEST(ParsePolicy, BackfillDefaultsToFcfsOrder) {
  auto p = parse_policy("backfill");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "backfill");
  EXPECT_EQ(p->base, "fcfs");
  EXPECT_EQ(policy_text(*p), "backfill:fcfs");
}

TEST(ParsePolicy, BackfillTakesAnOrderCaseAndSpacesIgnored) {
  auto p = parse_policy("  Backfill : Priority ");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "backfill");
  EXPECT_EQ(p->base, "priority");
  EXPECT_EQ(policy_text(*p), "backfill:priority");
}

TEST(ParsePolicy, ErrorsNameTheText) {
  auto unknown = parse_policy("fifo");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().what().find("\"fifo\""), std::string::npos);
  EXPECT_NE(unknown.error().what().find("unknown policy"), std::string::npos);

  auto nested = parse_policy("backfill:backfill");
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().what().find("cannot keep the order \"backfill\""), std::string::npos);

  auto suffix = parse_policy("fcfs:priority");
  ASSERT_FALSE(suffix);
  EXPECT_NE(suffix.error().what().find("only backfill"), std::string::npos);

  EXPECT_FALSE(parse_policy(""));
  EXPECT_FALSE(parse_policy("backfill:"));
}

}  // namespace
}  // namespace cardiac::sched
