// SPDX-License-Identifier: Apache-2.0
// Who may do what: owners, root, the admin group, an unprivileged agent.
#include "queue/auth.h"

#include <gtest/gtest.h>

namespace cardiac::queue {
namespace {

Principal user(uid_t uid, std::vector<gid_t> groups = {}) {
  Principal p;
  p.uid = uid;
  p.gid = uid;
  p.groups = groups;
  p.groups.push_back(uid);
  p.user = "u" + std::to_string(uid);
  return p;
}

Job job_of(uid_t uid) {
  Job j;
  j.id = 1;
  j.uid = uid;
  j.user = "u" + std::to_string(uid);
  return j;
}

TEST(Auth, OwnersRootAndAdminsControlJobs) {
  AuthPolicy root_agent{0, 50};
  EXPECT_TRUE(may_control(root_agent, user(1001), job_of(1001), "cancel"));
  EXPECT_TRUE(may_control(root_agent, user(0), job_of(1001), "cancel"));
  EXPECT_TRUE(may_control(root_agent, user(1003, {50}), job_of(1001), "cancel"));
  auto denied = may_control(root_agent, user(1002), job_of(1001), "cancel");
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code, ErrorCode::kPermission);
  EXPECT_NE(denied.error().what().find("u1002 may not cancel job 1 of u1001"), std::string::npos);
  EXPECT_FALSE(may_read_logs(root_agent, user(1002), job_of(1001)));
  EXPECT_TRUE(may_read_logs(root_agent, user(1001), job_of(1001)));
  AuthPolicy no_admins{0, std::nullopt};
  EXPECT_FALSE(may_control(no_admins, user(1003, {50}), job_of(1001), "hold"));
}

TEST(Auth, AnUnprivilegedAgentServesOnlyItsUser) {
  AuthPolicy mine{1001, std::nullopt};
  EXPECT_TRUE(may_use(mine, user(1001)));
  auto other = may_use(mine, user(1002));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::kPermission);
  EXPECT_TRUE(may_use(AuthPolicy{0, std::nullopt}, user(1002)));
  EXPECT_TRUE(is_admin(mine, user(1001)));  // its own queue
}

TEST(Auth, PrioritiesAboveZeroAndFencesNeedAnAdmin) {
  AuthPolicy p{0, 50};
  EXPECT_TRUE(may_set_priority(p, user(1001), 0));
  EXPECT_TRUE(may_set_priority(p, user(1001), -100));
  EXPECT_FALSE(may_set_priority(p, user(1001), 1));
  EXPECT_TRUE(may_set_priority(p, user(1001, {50}), 500));
  EXPECT_TRUE(may_set_priority(p, user(0), 1000));
  EXPECT_FALSE(may_fence(p, user(1001)));
  EXPECT_TRUE(may_fence(p, user(0)));
}

TEST(Auth, ResolvesRootFromTheDatabases) {
  Principal r = resolve_principal(0, 0, 1);
  EXPECT_EQ(r.user, "root");
  EXPECT_FALSE(r.groups.empty());
  Principal nobody = resolve_principal(4000000, 4000000, 1);
  EXPECT_EQ(nobody.user, "4000000");
  EXPECT_EQ(nobody.groups, std::vector<gid_t>{4000000});
}

}  // namespace
}  // namespace cardiac::queue
