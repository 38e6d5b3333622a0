// SPDX-License-Identifier: Apache-2.0
// The agent's control socket, <state-dir>/agent.sock: the CLI's way to change alerts and record
// what was done about an incident. The caller is who the kernel says (SO_PEERCRED), so an ack,
// a silence or a remediation is recorded under the real user.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/parts.h"
#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"
#include "queue/auth.h"
#include "queue/socket_server.h"

namespace cardiac::agent {

inline constexpr const char* kControlSocketName = "agent.sock";

// Requests (one JSON line, the queue protocol's framing):
//   {"op": "alerts.ack", "id": 12, "by": "optional note"}
//   {"op": "alerts.silence", "matcher": "rule=x", "duration": "2h", "comment": "...", "by": ...}
//   {"op": "incidents.remediate", "id": 4, "action": "reset", "note": "nvidia-smi -r", "by": ...}
// Allowed to root, the agent's own user and members of [queue] admin_group; anyone else gets a
// permission error. The alert book records the caller's login name; a `by` is kept beside it
// as what the caller said ("ana (says night shift)"), never instead of it.
// `clock` dates remediations.
nlohmann::json handle_control(AgentStore& store, const queue::AuthPolicy& policy,
                              const queue::Principal& who, const nlohmann::json& request,
                              const Clock& clock);

// Binds <state-dir>/agent.sock (refused when another agent answers there) and serves it.
[[nodiscard]] Result<std::unique_ptr<queue::SocketServer>> start_control(const config::Config& c,
                                                                         AgentStore& store,
                                                                         const Clock& clock);

}  // namespace cardiac::agent
