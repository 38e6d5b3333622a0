// SPDX-License-Identifier: Apache-2.0
// The [queue] table: fair-share parameters, weights and the account tree, and the errors for
// bad values, unknown keys and trees that do not hold together.
#include <gtest/gtest.h>

#include "config/config.h"

namespace cardiac::config {
namespace {

std::string error_of(std::string_view text) {
  auto c = parse_config(text, "q.toml");
  return c ? std::string("(parsed)") : c.error().what();
}

TEST(QueueConfig, DefaultsMatchTheDefaultFile) {
  auto d = parse_config(default_config_text(), "default");
  ASSERT_TRUE(d) << d.error().what();
  QueueSettings s;
  EXPECT_EQ(d->queue.fair_tree, s.fair_tree);
  EXPECT_EQ(d->queue.dampening, s.dampening);
  EXPECT_EQ(d->queue.half_life, s.half_life);
  EXPECT_EQ(d->queue.max_age, s.max_age);
  EXPECT_EQ(d->queue.priority_calc_period, s.priority_calc_period);
  EXPECT_EQ(s.priority_calc_period, 5 * 60 * kNsPerSec);
  EXPECT_EQ(d->queue.weights.fairshare, s.weights.fairshare);
  EXPECT_EQ(d->queue.weights.qos, s.weights.qos);
  EXPECT_TRUE(d->queue.accounts.empty());
  EXPECT_TRUE(d->queue.users.empty());
}

TEST(QueueConfig, ReadsTheTreeAndThePolicyParameters) {
  auto c = parse_config(R"(
[queue]
policy = "priority"
fair_tree = false
dampening = 2
half_life = "1d"
max_age = "12h"
favor_small = true
spread = true
[queue.weights]
age = 10
fairshare = 2.5
job_size = 0
qos = 100
[[queue.account]]
name = "physics"
shares = 40
[[queue.account]]
name = "theory"
parent = "physics"
shares = 1.5
[[queue.user]]
name = "alice"
account = "theory"
[[queue.user]]
name = "alice"
account = "physics"
shares = 3
)",
                        "q.toml");
  ASSERT_TRUE(c) << c.error().what();
  const auto& q = c->queue;
  EXPECT_FALSE(q.fair_tree);
  EXPECT_EQ(q.dampening, 2);
  EXPECT_EQ(q.half_life, 86400 * kNsPerSec);
  EXPECT_EQ(q.max_age, 12 * 3600 * kNsPerSec);
  EXPECT_TRUE(q.favor_small);
  EXPECT_TRUE(q.spread);
  EXPECT_EQ(q.weights.age, 10);
  EXPECT_EQ(q.weights.fairshare, 2.5);
  EXPECT_EQ(q.weights.job_size, 0);
  EXPECT_EQ(q.weights.qos, 100);
  ASSERT_EQ(q.accounts.size(), 2u);
  EXPECT_EQ(q.accounts[0].name, "physics");
  EXPECT_EQ(q.accounts[0].parent, "");
  EXPECT_EQ(q.accounts[0].shares, 40);
  EXPECT_EQ(q.accounts[1].parent, "physics");
  EXPECT_EQ(q.accounts[1].shares, 1.5);
  ASSERT_EQ(q.users.size(), 2u);
  EXPECT_EQ(q.users[0].account, "theory");  // the first listed: alice's default
  EXPECT_EQ(q.users[0].shares, 1);
  EXPECT_EQ(q.users[1].shares, 3);
}

TEST(QueueConfig, BadValuesAndUnknownKeysNameTheirPlace) {
  EXPECT_EQ(error_of("[queue]\ndampening = 0.5\n"),
            "q.toml:2:13: 'queue.dampening' must be a number of at least 1");
  EXPECT_EQ(error_of("[queue]\nhalf_life = \"soon\"\n"),
            "q.toml:2:13: 'queue.half_life' must be a positive duration such as \"5s\" or "
            "\"500ms\"");
  EXPECT_EQ(error_of("[queue]\nfair_tree = \"yes\"\n"),
            "q.toml:2:13: 'queue.fair_tree' must be true or false");
  EXPECT_EQ(error_of("[queue.weights]\nage = -1\n"),
            "q.toml:2:7: 'queue.weights.age' must be a number of at least 0");
  EXPECT_EQ(error_of("[queue.weights]\nsize = 1\n"),
            "q.toml:2:1: unknown key 'queue.weights.size'");
  EXPECT_EQ(error_of("[queue]\nweights = 3\n"), "q.toml:2:11: 'queue.weights' must be a table");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\nshare = 2\n"),
            "q.toml:3:1: unknown key 'queue.account[0].share'");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\nshares = \"many\"\n"),
            "q.toml:3:10: 'queue.account[0].shares' must be a number of at least 0");
  EXPECT_EQ(error_of("[queue]\naccount = \"a\"\n"),
            "q.toml:2:11: 'queue.account' must be an array of tables ([[queue.account]])");
}

TEST(QueueConfig, AutoUnfenceIsOnAfterTenMinutesUnlessSetOtherwise) {
  auto d = parse_config(default_config_text(), "default");
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_TRUE(d->queue.auto_unfence);
  EXPECT_EQ(d->queue.auto_unfence_after, 10 * 60 * kNsPerSec);
  EXPECT_EQ(QueueSettings{}.auto_unfence_after, d->queue.auto_unfence_after);
  auto c = parse_config("[queue]\nauto_unfence = false\nauto_unfence_after = \"30m\"\n", "q.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_FALSE(c->queue.auto_unfence);
  EXPECT_EQ(c->queue.auto_unfence_after, 30 * 60 * kNsPerSec);
  EXPECT_NE(error_of("[queue]\nauto_unfence_after = \"soon\"\n").find("queue.auto_unfence_after"),
            std::string::npos);
}

TEST(QueueConfig, PriorityCalcPeriodIsADurationOrZero) {
  auto c = parse_config("[queue]\npriority_calc_period = \"90s\"\n", "q.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->queue.priority_calc_period, 90 * kNsPerSec);
  for (const char* zero : {"0", "\"0\"", "\"0s\""}) {
    auto z = parse_config(std::string("[queue]\npriority_calc_period = ") + zero + "\n", "q.toml");
    ASSERT_TRUE(z) << zero << ": " << z.error().what();
    EXPECT_EQ(z->queue.priority_calc_period, 0) << zero;
  }
  EXPECT_EQ(error_of("[queue]\npriority_calc_period = \"often\"\n"),
            "q.toml:2:24: 'queue.priority_calc_period' must be 0 or a positive duration such as "
            "\"5m\" or \"30s\"");
  EXPECT_EQ(error_of("[queue]\npriority_calc_period = -5\n"),
            "q.toml:2:24: 'queue.priority_calc_period' must be 0 or a positive duration such as "
            "\"5m\" or \"30s\"");
}

TEST(QueueConfig, TreesThatDoNotHoldTogetherAreRefused) {
  EXPECT_EQ(error_of("[[queue.account]]\nshares = 2\n"),
            "q.toml:1:1: 'queue.account[0].name' is required");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\n[[queue.account]]\nname = \"a\"\n"),
            "q.toml:3:1: account 'a' is listed twice");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\nparent = \"nope\"\n"),
            "q.toml:1:1: account 'a': parent 'nope' is not a listed account");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\nparent = \"b\"\n"
                     "[[queue.account]]\nname = \"b\"\nparent = \"a\"\n"),
            "q.toml:1:1: accounts form a cycle of parents: a -> b -> a");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\nparent = \"a\"\n"),
            "q.toml:1:1: accounts form a cycle of parents: a -> a");
  EXPECT_EQ(error_of("[[queue.user]]\nname = \"alice\"\naccount = \"a\"\n"),
            "q.toml:1:1: user 'alice': account 'a' is not a listed account ([[queue.account]])");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\n[[queue.user]]\nname = \"alice\"\n"),
            "q.toml:3:1: 'queue.user[0].account' is required");
  EXPECT_EQ(error_of("[[queue.account]]\nname = \"a\"\n[[queue.user]]\nname = \"u\"\n"
                     "account = \"a\"\n[[queue.user]]\nname = \"u\"\naccount = \"a\"\n"),
            "q.toml:6:1: user 'u' is listed twice in account 'a'");
}

}  // namespace
}  // namespace cardiac::config
