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
    EXPECT_FALSE(p->backfill);
    EXPECT_EQ(order_name(p->order), name);
    EXPECT_EQ(policy_text(*p), name);
  }
}

TEST(ParsePolicy, BackfillDefaultsToFcfsOrder) {
  auto p = parse_policy("backfill");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->backfill);
  EXPECT_EQ(p->order, Order::kFcfs);
  EXPECT_EQ(policy_text(*p), "backfill:fcfs");
}

TEST(ParsePolicy, BackfillTakesAnOrderCaseAndSpacesIgnored) {
  auto p = parse_policy("  Backfill : Priority ");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->backfill);
  EXPECT_EQ(p->order, Order::kPriority);
  EXPECT_EQ(policy_text(*p), "backfill:priority");
}

TEST(ParseOrder, EveryNameReadsBackAndUnknownNamesAreRefused) {
  for (Order o : {Order::kFcfs, Order::kPriority, Order::kFairshare, Order::kSjf, Order::kLas}) {
    EXPECT_EQ(parse_order(order_name(o)), o) << order_name(o);
  }
  EXPECT_EQ(parse_order("backfill"), std::nullopt);
  EXPECT_EQ(parse_order("FCFS"), std::nullopt);
  EXPECT_EQ(parse_order(""), std::nullopt);
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
