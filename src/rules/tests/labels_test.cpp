// SPDX-License-Identifier: Apache-2.0
#include "rules/labels.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace cardiac::rules {
namespace {

TEST(Labels, ACopySharesTheMapUntilOneOfThemChanges) {
  Labels a{{"gpu", "0"}, {"uuid", "GPU-1"}};
  Labels b = a;
  EXPECT_EQ(&a.map(), &b.map());
  b["xid"] = "79";
  EXPECT_NE(&a.map(), &b.map());
  EXPECT_EQ(a.size(), 2U);
  EXPECT_FALSE(a.contains("xid"));
  EXPECT_EQ(b.at("xid"), "79");
  EXPECT_NE(a, b);
  b.erase("xid");
  EXPECT_EQ(a, b);
}

TEST(Labels, ASetHeldAloneChangesInPlace) {
  Labels a{{"gpu", "0"}};
  const auto* before = &a.map();
  a["uuid"] = "GPU-1";
  EXPECT_EQ(&a.map(), before);
}

TEST(Labels, TheKeyIsCanonicalAndFollowsAChange) {
  Labels a{{"uuid", "GPU-1"}, {"gpu", "0"}};
  EXPECT_EQ(a.key(), "gpu=0,uuid=GPU-1");
  const Labels kept = a;
  // The key was made: a change must not reuse the map whose key is kept.
  a["gpu"] = "1";
  EXPECT_EQ(a.key(), "gpu=1,uuid=GPU-1");
  EXPECT_EQ(kept.key(), "gpu=0,uuid=GPU-1");
  Labels alone{{"nic", "eth0"}};
  EXPECT_EQ(alone.key(), "nic=eth0");
  alone["mount"] = "/";  // held alone, but keyed: still a fresh key
  EXPECT_EQ(alone.key(), "mount=/,nic=eth0");
}

TEST(Labels, EmptySetsAreEqualHoweverTheyCameToBeEmpty) {
  const Labels none;
  Labels emptied{{"a", "b"}};
  emptied.erase("a");
  EXPECT_EQ(none, emptied);
  EXPECT_EQ(none.key(), "");
  EXPECT_EQ(emptied.key(), "");
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(emptied.erase("absent"), 0U);
}

TEST(Labels, OrderIsTheMapsOrder) {
  const Labels a{{"gpu", "0"}};
  const Labels b{{"gpu", "1"}};
  EXPECT_LT(a, b);
  EXPECT_EQ(Labels(Labels::Map{{"gpu", "0"}}), a);
}

// Threads that share one set and ask for its key get one key, made once.
TEST(Labels, ThreadsSharingASetAgreeOnItsKey) {
  const Labels shared{{"gpu", "3"}, {"uuid", "GPU-3"}};
  std::vector<const std::string*> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      const Labels mine = shared;
      seen[i] = &mine.key();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto* k : seen) EXPECT_EQ(k, &shared.key());
  EXPECT_EQ(shared.key(), "gpu=3,uuid=GPU-3");
}

}  // namespace
}  // namespace cardiac::rules
