// SPDX-License-Identifier: Apache-2.0
// Who may do what with the queue. Identity comes from the socket's peer credentials
// (SO_PEERCRED), never from what a client says. Everyone may list jobs; the owner, root and
// members of the configured admin group may cancel, hold and release a job; only root and
// admins may raise priorities above 0 or manage fences. An agent that is not root runs jobs
// as itself, so it serves only its own user.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "queue/job.h"

namespace cardiac::queue {

// The caller, resolved from its credentials.
struct Principal {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::vector<gid_t> groups;  // supplementary groups (from the group database), with gid
  std::string user;           // login name, or the uid in decimal when it has none
};

// Looks the uid up in the password and group databases. A uid without an entry keeps its
// number as its name and only its primary group.
Principal resolve_principal(uid_t uid, gid_t gid, pid_t pid);

struct AuthPolicy {
  uid_t agent_uid = 0;             // geteuid() of the agent
  std::optional<gid_t> admin_gid;  // [queue] admin_group, resolved
};

// The agent's own uid and `[queue] admin_group` looked up (empty: no admin group); the queue's
// socket and the agent's control socket both let callers through by it.
Result<AuthPolicy> make_auth_policy(const std::string& admin_group);

[[nodiscard]] bool is_admin(const AuthPolicy& p, const Principal& who);
// Whether the caller may talk to this agent at all.
[[nodiscard]] Status may_use(const AuthPolicy& p, const Principal& who);
// Cancel, hold, release (`action` names it in the error).
[[nodiscard]] Status may_control(const AuthPolicy& p, const Principal& who, const Job& job,
                                 std::string_view action);
// Reading a job's output.
[[nodiscard]] Status may_read_logs(const AuthPolicy& p, const Principal& who, const Job& job);
[[nodiscard]] Status may_set_priority(const AuthPolicy& p, const Principal& who, int priority);
[[nodiscard]] Status may_fence(const AuthPolicy& p, const Principal& who);

}  // namespace cardiac::queue
