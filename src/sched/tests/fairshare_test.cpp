// SPDX-License-Identifier: Apache-2.0
// Tests for usage decay, Slurm's classic fair-share factor and Fair Tree ranking.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "sched/fairshare.h"
#include "sched/sched.h"

namespace cardiac::sched {
namespace {

constexpr DurationNs kDay = 24 * 3600 * kNsPerSec;

const ShareRow& row(const std::vector<ShareRow>& rows, std::string_view account,
                    std::string_view user = "") {
  for (const ShareRow& r : rows) {
    if (r.account == account && r.user == user) return r;
  }
  ADD_FAILURE() << "no row " << account << "/" << user;
  static const ShareRow none;
  return none;
}

TEST(Decay, OneHalfLifeHalvesUsage) {
  Usage u;
  u.updated_at = 1000 * kDay;
  u.usage["alice"] = 100;
  u.usage["bob"] = 8;
  decay_usage(u, 1007 * kDay, 7 * kDay);
  EXPECT_DOUBLE_EQ(u.usage["alice"], 50);
  EXPECT_DOUBLE_EQ(u.usage["bob"], 4);
  EXPECT_EQ(u.updated_at, 1007 * kDay);
  decay_usage(u, 1021 * kDay, 7 * kDay);  // two more half-lives
  EXPECT_DOUBLE_EQ(u.usage["alice"], 12.5);
}

TEST(Decay, PiecewiseEqualsOneStepAndNewUsageIsAddedUndecayed) {
  Usage a;
  a.usage["x"] = 64;
  Usage b = a;
  decay_usage(a, 3 * kDay, 7 * kDay);
  decay_usage(b, 1 * kDay, 7 * kDay);
  decay_usage(b, 3 * kDay, 7 * kDay);
  EXPECT_NEAR(a.usage["x"], b.usage["x"], 1e-9);
  EXPECT_NEAR(a.usage["x"], 64 * std::exp2(-3.0 / 7.0), 1e-9);
  charge_usage(a, "x", 10);
  charge_usage(a, "y", 5);
  EXPECT_NEAR(a.usage["x"], 64 * std::exp2(-3.0 / 7.0) + 10, 1e-9);
  EXPECT_DOUBLE_EQ(a.usage["y"], 5);
}

TEST(Decay, ZeroHalfLifeAndTimeGoingBackDoNotDecay) {
  Usage u;
  u.updated_at = 10 * kDay;
  u.usage["x"] = 10;
  decay_usage(u, 5 * kDay, 7 * kDay);
  EXPECT_DOUBLE_EQ(u.usage["x"], 10);
  EXPECT_EQ(u.updated_at, 10 * kDay);
  decay_usage(u, 20 * kDay, 0);
  EXPECT_DOUBLE_EQ(u.usage["x"], 10);
  EXPECT_EQ(u.updated_at, 20 * kDay);
}

PolicyConfig classic() {
  PolicyConfig p;
  p.fair_tree = false;
  return p;
}

TEST(Classic, ExactlyAtShareIsOneHalf) {
  Usage u;
  u.usage = {{"alice", 30}, {"bob", 30}};
  auto rows = shares(u, classic());
  EXPECT_DOUBLE_EQ(row(rows, "alice", "alice").factor, 0.5);
  EXPECT_DOUBLE_EQ(row(rows, "bob", "bob").factor, 0.5);
  EXPECT_DOUBLE_EQ(row(rows, "alice", "alice").norm_shares, 0.5);
  EXPECT_DOUBLE_EQ(row(rows, "alice", "alice").norm_usage, 0.5);
}

TEST(Classic, NoUsageIsOneAndAllTheUsageIsAQuarterAtHalfShare) {
  Usage u;
  u.usage = {{"alice", 100}};
  auto rows = shares(u, classic(), {"bob"});
  EXPECT_DOUBLE_EQ(row(rows, "bob", "bob").factor, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "alice", "alice").factor, 0.25);  // 2^(-1 / 0.5)
}

TEST(Classic, DampeningSoftensTheFactor) {
  Usage u;
  u.usage = {{"alice", 30}, {"bob", 30}};
  PolicyConfig p = classic();
  p.dampening = 2;
  EXPECT_NEAR(row(shares(u, p), "alice", "alice").factor, std::sqrt(0.5), 1e-12);
}

// physics (60 shares: p1, p2) and chemistry (40 shares: c1); usage p1 30, p2 10, c1 60.
Usage two_departments() {
  Usage u;
  u.accounts = {{.name = "physics", .parent = "", .shares = 60},
                {.name = "chemistry", .parent = "", .shares = 40}};
  u.users = {{.user = "p1", .account = "physics", .shares = 1},
             {.user = "p2", .account = "physics", .shares = 1},
             {.user = "c1", .account = "chemistry", .shares = 1}};
  u.usage = {{"p1", 30}, {"p2", 10}, {"c1", 60}};
  return u;
}

TEST(Classic, EffectiveUsageDownTheTreeMatchesHandComputation) {
  auto rows = shares(two_departments(), classic());
  // Tier 1: UE = U. physics S 0.6, U 0.4: 2^(-0.4/0.6); chemistry S 0.4, U 0.6: 2^(-1.5).
  EXPECT_NEAR(row(rows, "physics").factor, 0.629960525, 1e-9);
  EXPECT_NEAR(row(rows, "chemistry").factor, 0.353553391, 1e-9);
  // p1: S 0.3, UA 0.3, UE = 0.3 + (0.4 - 0.3) * 0.5 = 0.35 -> 2^(-7/6).
  EXPECT_NEAR(row(rows, "physics", "p1").norm_shares, 0.3, 1e-12);
  EXPECT_NEAR(row(rows, "physics", "p1").factor, 0.445449359, 1e-9);
  // p2: UA 0.1, UE = 0.1 + (0.4 - 0.1) * 0.5 = 0.25 -> 2^(-5/6).
  EXPECT_NEAR(row(rows, "physics", "p2").factor, 0.561231024, 1e-9);
  // c1 holds all of chemistry's shares: UE = 0.6 -> 2^(-1.5).
  EXPECT_NEAR(row(rows, "chemistry", "c1").factor, 0.353553391, 1e-9);
  EXPECT_DOUBLE_EQ(row(rows, "chemistry").raw_usage, 60);
  EXPECT_EQ(row(rows, "physics", "p1").depth, 1u);
}

TEST(FairTree, LevelFairshareAndRanksMatchHandComputation) {
  auto rows = shares(two_departments(), PolicyConfig{});
  EXPECT_DOUBLE_EQ(row(rows, "physics").level_fs, 1.5);  // 0.6 / 0.4
  EXPECT_NEAR(row(rows, "chemistry").level_fs, 0.4 / 0.6, 1e-12);
  EXPECT_DOUBLE_EQ(row(rows, "physics", "p2").level_fs, 2.0);  // 0.5 / 0.25
  EXPECT_NEAR(row(rows, "physics", "p1").level_fs, 0.5 / 0.75, 1e-12);
  // Depth first: physics (p2, p1), then chemistry (c1); 3 users.
  EXPECT_DOUBLE_EQ(row(rows, "physics", "p2").factor, 1.0);
  EXPECT_NEAR(row(rows, "physics", "p1").factor, 2.0 / 3, 1e-12);
  EXPECT_NEAR(row(rows, "chemistry", "c1").factor, 1.0 / 3, 1e-12);
  // Accounts get no factor under Fair Tree.
  EXPECT_DOUBLE_EQ(row(rows, "physics").factor, 0);
}

TEST(FairTree, NoUsageIsInfiniteLevelFairshare) {
  Usage u;
  u.usage = {{"alice", 10}};
  auto rows = shares(u, PolicyConfig{}, {"bob"});
  EXPECT_TRUE(std::isinf(row(rows, "bob").level_fs));
  EXPECT_DOUBLE_EQ(row(rows, "bob", "bob").factor, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "alice", "alice").factor, 0.5);
}

TEST(FairTree, TiedSiblingUsersShareARank) {
  Usage u;
  u.accounts = {{.name = "a", .parent = "", .shares = 1}, {.name = "b", .parent = "", .shares = 1}};
  u.users = {{.user = "a1", .account = "a", .shares = 1},
             {.user = "a2", .account = "a", .shares = 1},
             {.user = "b1", .account = "b", .shares = 1}};
  u.usage = {{"a1", 10}, {"a2", 10}, {"b1", 100}};
  auto rows = shares(u, PolicyConfig{});
  EXPECT_DOUBLE_EQ(row(rows, "a", "a1").factor, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "a", "a2").factor, 1.0);
  // Competition ranking: the tie used two ranks.
  EXPECT_NEAR(row(rows, "b", "b1").factor, 1.0 / 3, 1e-12);
}

TEST(FairTree, UserTiedWithSiblingAccountTakesItsTopUsersRank) {
  Usage u;
  u.accounts = {{.name = "a", .parent = "", .shares = 1},
                {.name = "s", .parent = "a", .shares = 1}};
  u.users = {{.user = "x", .account = "a", .shares = 1},
             {.user = "s1", .account = "s", .shares = 1},
             {.user = "s2", .account = "s", .shares = 1}};
  u.usage = {{"x", 10}, {"s1", 10}};
  auto rows = shares(u, PolicyConfig{});
  ASSERT_DOUBLE_EQ(row(rows, "a", "x").level_fs, row(rows, "s").level_fs);
  EXPECT_DOUBLE_EQ(row(rows, "a", "x").factor, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "s", "s2").factor, 1.0);  // s's top user, tied with x
  EXPECT_NEAR(row(rows, "s", "s1").factor, 1.0 / 3, 1e-12);
}

TEST(FairTree, TiedSiblingAccountsAreMergedBeforeRanking) {
  Usage u;
  u.accounts = {{.name = "a", .parent = "", .shares = 1}, {.name = "b", .parent = "", .shares = 1}};
  u.users = {{.user = "a1", .account = "a", .shares = 1},
             {.user = "a2", .account = "a", .shares = 1},
             {.user = "b1", .account = "b", .shares = 1},
             {.user = "b2", .account = "b", .shares = 1}};
  u.usage = {{"a1", 10}, {"a2", 30}, {"b1", 20}, {"b2", 20}};
  auto rows = shares(u, PolicyConfig{});
  // Merged: a1 (LF 2), b1 and b2 (1, tied), a2 (2/3). Without merging a2 would rank second.
  EXPECT_DOUBLE_EQ(row(rows, "a", "a1").factor, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "b", "b1").factor, 0.75);
  EXPECT_DOUBLE_EQ(row(rows, "b", "b2").factor, 0.75);
  EXPECT_DOUBLE_EQ(row(rows, "a", "a2").factor, 0.25);
}

void users_under(const std::vector<detail::FsNode>& nodes, int idx, std::vector<int>& out) {
  for (int c : nodes[idx].children) {
    if (nodes[c].user) {
      out.push_back(c);
    } else {
      users_under(nodes, c, out);
    }
  }
}

// If account A has a higher Level FS than its sibling B, every user under A outranks every user
// under B, on random trees.
TEST(FairTree, HigherAccountLevelFairshareOutranksEveryUserBelowTheSibling) {
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
    Usage u;
    const int accounts = 2 + pick(6);
    for (int a = 0; a < accounts; ++a) {
      const std::string parent = a == 0 || pick(3) == 0 ? "" : "acct" + std::to_string(pick(a));
      u.accounts.push_back({.name = "acct" + std::to_string(a),
                            .parent = parent,
                            .shares = static_cast<double>(1 + pick(4))});
    }
    const int users = 3 + pick(12);
    for (int i = 0; i < users; ++i) {
      const std::string name = "u" + std::to_string(i);
      u.users.push_back({.user = name,
                         .account = "acct" + std::to_string(pick(accounts)),
                         .shares = static_cast<double>(1 + pick(3))});
      if (pick(4) != 0) u.usage[name] = pick(5) * 10.0;
    }
    detail::FairShareTree tree(u);
    tree.compute(u, 1);
    const auto& nodes = tree.nodes();
    for (std::size_t p = 0; p < nodes.size(); ++p) {
      for (int a : nodes[p].children) {
        for (int b : nodes[p].children) {
          if (nodes[a].user || nodes[b].user || !(nodes[a].level_fs > nodes[b].level_fs)) continue;
          std::vector<int> ua;
          std::vector<int> ub;
          users_under(nodes, a, ua);
          users_under(nodes, b, ub);
          for (int x : ua) {
            for (int y : ub) {
              ASSERT_GT(nodes[x].fair_tree, nodes[y].fair_tree)
                  << "seed " << seed << ": " << nodes[x].name << " vs " << nodes[y].name;
            }
          }
        }
      }
    }
  }
}

TEST(Tree, UnknownAndCyclicParentsHangOffTheRoot) {
  Usage u;
  u.accounts = {{.name = "a", .parent = "b", .shares = 1},
                {.name = "b", .parent = "a", .shares = 1},
                {.name = "c", .parent = "missing", .shares = 1}};
  u.usage = {{"z", 1}};
  auto rows = shares(u, PolicyConfig{});
  EXPECT_EQ(row(rows, "a").depth, 1u);
  EXPECT_EQ(row(rows, "b").depth, 0u);  // b's parent a would close a cycle
  EXPECT_EQ(row(rows, "missing").depth, 0u);
  EXPECT_EQ(row(rows, "c").depth, 1u);
  EXPECT_EQ(row(rows, "z", "z").depth, 1u);  // unlisted users get their own account
}

TEST(Tree, JobAccountsAddAssociationsAndDefaultsDoNotDependOnOrder) {
  Usage u;
  u.usage = {{"dave", 10}};
  detail::FairShareTree one(u);
  const int proj = one.ensure("erin", "proj");
  const int own = one.ensure("erin", "");
  detail::FairShareTree two(u);
  const int own2 = two.ensure("erin", "");
  const int proj2 = two.ensure("erin", "proj");
  EXPECT_NE(proj, own);
  EXPECT_EQ(one.nodes()[own].account, "erin");
  EXPECT_EQ(two.nodes()[own2].account, "erin");
  EXPECT_EQ(one.nodes()[proj].account, "proj");
  EXPECT_EQ(two.nodes()[proj2].account, "proj");
  EXPECT_EQ(one.ensure("dave", ""), one.ensure("dave", "dave"));
  one.compute(u, 1);
  EXPECT_DOUBLE_EQ(one.nodes()[one.ensure("dave", "")].raw_usage, 10);
}

}  // namespace
}  // namespace cardiac::sched
