// SPDX-License-Identifier: Apache-2.0
// The client's end of the queue socket: connect to <state-dir>/queue.sock, send one request,
// read one answer. Used by `cardiac submit`, `queue`, `cancel`, … and the tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "queue/protocol.h"

namespace cardiac::queue {

// Sends `request` and returns the answer's body (with "ok": true), or the error the agent
// answered with (its code kept: permission, not_found, invalid, …). A missing or dead socket
// is kUnavailable with a message that says how to reach the agent.
// `socket_name` picks the socket in the state directory: the queue's, or the agent's control
// socket (alerts). `clock` (its monotonic time) bounds the wait for the answer.
[[nodiscard]] Result<nlohmann::json> call_agent(const Clock& clock, const std::string& state_dir,
                                                const nlohmann::json& request,
                                                DurationNs timeout = 60 * kNsPerSec,
                                                const std::string& socket_name = kSocketName);

}  // namespace cardiac::queue
