// SPDX-License-Identifier: Apache-2.0
// The client ↔ agent protocol over <state-dir>/queue.sock: one JSON object per line each way,
// one request per connection. A request is {"op": "...", ...}; the answer is {"ok": true, ...}
// or {"ok": false, "error": "...", "code": "permission"|"not_found"|"invalid"|...}.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace cardiac::queue {

inline constexpr const char* kSocketName = "queue.sock";
// Requests above this are refused: a submit with its whole environment is a few KiB.
inline constexpr std::size_t kMaxRequestBytes = 1 << 20;
// Answers above this are refused by the client (a job list of a huge queue still fits).
inline constexpr std::size_t kMaxResponseBytes = 256u << 20;

std::string socket_path(const std::string& state_dir);

// One request line → its JSON object. Errors: too long, not JSON, not an object, no "op".
[[nodiscard]] Result<nlohmann::json> parse_request(std::string_view line);

// {"ok": false, "error": what, "code": name}.
nlohmann::json error_response(const Error& e);
// {"ok": true} merged with `body`'s members.
nlohmann::json ok_response(nlohmann::json body = nlohmann::json::object());
// An answer → its body, or the error it carries (code mapped back).
[[nodiscard]] Result<nlohmann::json> parse_response(std::string_view line);

// Serialises with invalid UTF-8 replaced (log output and environments are bytes).
std::string dump_line(const nlohmann::json& j);

}  // namespace cardiac::queue
