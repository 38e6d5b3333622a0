// SPDX-License-Identifier: Apache-2.0
#include "slurm/plan.h"

#include <gtest/gtest.h>

#include "slurm/reason.h"

namespace cardiac::slurm {
namespace {

constexpr TimeNs kNow = 1796430000LL * kNsPerSec;

NodeInfo node(std::string name, bool drain = false, std::string reason = "", TimeNs when = kNow) {
  NodeInfo n;
  n.name = std::move(name);
  n.drain = drain;
  n.state = drain ? "IDLE+DRAIN" : "IDLE";
  n.reason = std::move(reason);
  n.reason_time = n.reason.empty() ? 0 : when;
  return n;
}

std::vector<NodeInfo> fleet(std::size_t n) {
  std::vector<NodeInfo> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(node("n" + std::to_string(i)));
  return out;
}

TEST(SlurmDrainLimit, AllowanceIsAShareWithAFloorAndACap) {
  DrainLimit l;  // 10 %, at least 1
  EXPECT_EQ(drain_allowance(l, 1), 1u);
  EXPECT_EQ(drain_allowance(l, 2), 1u);
  EXPECT_EQ(drain_allowance(l, 15), 1u);  // floor, not round
  EXPECT_EQ(drain_allowance(l, 20), 2u);
  EXPECT_EQ(drain_allowance(l, 1000), 100u);
  l.max_nodes = 8;
  EXPECT_EQ(drain_allowance(l, 1000), 8u);
  l.percent = 0;
  l.min_nodes = 0;
  EXPECT_EQ(drain_allowance(l, 1000), 0u);
  l.percent = 30;
  l.max_nodes = 0;
  EXPECT_EQ(drain_allowance(l, 10), 3u);  // 30 % of 10 is exactly 3 despite rounding
}

TEST(SlurmDrainLimit, CountsOnlyCardiacsRecentDrainsOfOtherNodes) {
  DrainLimit l;
  auto nodes = fleet(4);
  nodes[0] = node("n0", true, "cardiac: GPU 1 lost", kNow - 60 * kNsPerSec);
  nodes[1] = node("n1", true, "maintenance", kNow);                                // a person's
  nodes[2] = node("n2", true, "cardiac: GPU 2 lost", kNow - 11 * 60 * kNsPerSec);  // too old
  nodes[3] = node("n3", true, "cardiac: GPU 0 lost", 0);  // time unreadable: counted
  nodes[3].reason_time = 0;
  EXPECT_EQ(recent_drains(nodes, "n9", l, kNow), (std::vector<std::string>{"n0", "n3"}));
  EXPECT_EQ(recent_drains(nodes, "n0", l, kNow), (std::vector<std::string>{"n3"}));
}

TEST(SlurmPlan, CriticalFaultDrainsWithCardiacsReason) {
  auto nodes = fleet(20);
  auto p = plan_healthcheck({"GPU 3 (0000:3b:00.0): lost from the bus", "GPU 4: hot"}, nodes[0],
                            nodes, DrainLimit{}, kNow);
  EXPECT_EQ(p.action, Action::kDrain);
  EXPECT_EQ(p.reason, "cardiac: GPU 3 (0000:3b:00.0): lost from the bus; 1 more critical problem");
}

TEST(SlurmPlan, SecondDrainWithinTheWindowIsHeld) {
  auto nodes = fleet(2);
  nodes[0] = node("n0", true, "cardiac: GPU 5 lost", kNow - 5 * kNsPerSec);
  auto p = plan_healthcheck({"GPU 0 lost"}, nodes[1], nodes, DrainLimit{}, kNow);
  EXPECT_EQ(p.action, Action::kHold);
  EXPECT_EQ(p.recent, 1u);
  EXPECT_EQ(p.allowance, 1u);
  EXPECT_NE(p.why.find("n0"), std::string::npos) << p.why;
  // After the window the same drain goes ahead.
  auto later =
      plan_healthcheck({"GPU 0 lost"}, nodes[1], nodes, DrainLimit{}, kNow + 11 * 60 * kNsPerSec);
  EXPECT_EQ(later.action, Action::kDrain);
}

TEST(SlurmDrainLimit, OfTwoSimultaneousDrainsTheLaterOneIsUndone) {
  auto nodes = fleet(3);
  nodes[0] = node("n0", true, "cardiac: GPU 1 lost", kNow - 2 * kNsPerSec);
  nodes[1] = node("n1", true, "cardiac: GPU 2 lost", kNow - 2 * kNsPerSec);  // same second
  nodes[2] = node("n2", true, "cardiac: GPU 3 lost", kNow - 1 * kNsPerSec);
  DrainLimit l;
  l.min_nodes = 2;
  EXPECT_FALSE(drain_overdrawn(nodes, "n0", l, kNow));
  EXPECT_FALSE(drain_overdrawn(nodes, "n1", l, kNow));  // ties go by name
  EXPECT_TRUE(drain_overdrawn(nodes, "n2", l, kNow));
  // A drain older than the window no longer takes a place.
  nodes[0].reason_time = kNow - 20 * 60 * kNsPerSec;
  EXPECT_FALSE(drain_overdrawn(nodes, "n2", l, kNow));
}

TEST(SlurmPlan, ResumesOnlyItsOwnDrain) {
  auto ours = node("n0", true, "cardiac: GPU 5 lost");
  EXPECT_EQ(plan_healthcheck({}, ours, {ours}, DrainLimit{}, kNow).action, Action::kResume);
  auto persons = node("n0", true, "maintenance");
  auto p = plan_healthcheck({}, persons, {persons}, DrainLimit{}, kNow);
  EXPECT_EQ(p.action, Action::kNone);
  EXPECT_NE(p.why.find("maintenance"), std::string::npos);
  auto idle = node("n0");
  EXPECT_EQ(plan_healthcheck({}, idle, {idle}, DrainLimit{}, kNow).action, Action::kNone);
}

TEST(SlurmPlan, AlreadyDrainedNodeIsLeftAsItIs) {
  auto persons = node("n0", true, "maintenance");
  auto p = plan_healthcheck({"GPU 0 lost"}, persons, {persons}, DrainLimit{}, kNow);
  EXPECT_EQ(p.action, Action::kNone);
  auto ours = node("n0", true, "cardiac: GPU 0 lost");
  EXPECT_EQ(plan_healthcheck({"GPU 0 lost"}, ours, {ours}, DrainLimit{}, kNow).action,
            Action::kNone);
}

}  // namespace
}  // namespace cardiac::slurm
