// SPDX-License-Identifier: Apache-2.0
// Authorization rules of the queue.
#include "queue/auth.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "core/format.h"

namespace cardiac::queue {
namespace {

Error denied(std::string message) {
  Error e;
  e.code = ErrorCode::kPermission;
  e.message = std::move(message);
  return e;
}

}  // namespace

Result<AuthPolicy> make_auth_policy(const std::string& admin_group) {
  AuthPolicy p;
  p.agent_uid = geteuid();
  if (admin_group.empty()) return p;
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  if (getgrnam_r(admin_group.c_str(), &g, buf.data(), buf.size(), &found) != 0 || !found) {
    return fail(
        Error::invalid(fmt::format("no such group '{}'", admin_group), "[queue] admin_group"));
  }
  p.admin_gid = found->gr_gid;
  return p;
}

Principal resolve_principal(uid_t uid, gid_t gid, pid_t pid) {
  Principal p;
  p.uid = uid;
  p.gid = gid;
  p.pid = pid;
  p.user = std::to_string(uid);
  p.groups = {gid};
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found) {
    p.user = found->pw_name;
    int n = 64;
    std::vector<gid_t> groups(static_cast<std::size_t>(n));
    if (getgrouplist(found->pw_name, gid, groups.data(), &n) < 0) {
      groups.resize(static_cast<std::size_t>(n));
      getgrouplist(found->pw_name, gid, groups.data(), &n);
    }
    groups.resize(static_cast<std::size_t>(std::max(n, 0)));
    if (!groups.empty()) p.groups = groups;
  }
  if (std::find(p.groups.begin(), p.groups.end(), gid) == p.groups.end()) p.groups.push_back(gid);
  return p;
}

bool is_admin(const AuthPolicy& p, const Principal& who) {
  if (who.uid == 0) return true;
  if (p.agent_uid != 0 && who.uid == p.agent_uid) return true;  // an agent's own queue
  if (!p.admin_gid) return false;
  return std::find(who.groups.begin(), who.groups.end(), *p.admin_gid) != who.groups.end();
}

Status may_use(const AuthPolicy& p, const Principal& who) {
  if (p.agent_uid == 0 || who.uid == p.agent_uid) return {};
  return fail(denied(fmt::format(
      "this agent runs as uid {}, not as root, so it can only run jobs as that user; uid {} "
      "({}) may not use it",
      p.agent_uid, who.uid, who.user)));
}

Status may_control(const AuthPolicy& p, const Principal& who, const Job& job,
                   std::string_view action) {
  if (who.uid == job.uid || is_admin(p, who)) return {};
  return fail(denied(fmt::format("{} may not {} job {} of {}: only its owner, root or an admin may",
                                 who.user, action, job.id, job.user)));
}

Status may_read_logs(const AuthPolicy& p, const Principal& who, const Job& job) {
  if (who.uid == job.uid || is_admin(p, who)) return {};
  return fail(denied(
      fmt::format("{} may not read the output of job {} of {}", who.user, job.id, job.user)));
}

Status may_set_priority(const AuthPolicy& p, const Principal& who, int priority) {
  if (priority <= 0 || is_admin(p, who)) return {};
  return fail(denied(fmt::format(
      "only root or an admin may give a priority above 0 (asked {}); lower your own jobs with a "
      "negative one",
      priority)));
}

Status may_fence(const AuthPolicy& p, const Principal& who) {
  if (is_admin(p, who)) return {};
  return fail(
      denied(fmt::format("{} may not add or clear fences: only root or an admin may", who.user)));
}

}  // namespace cardiac::queue
