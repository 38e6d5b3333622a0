// SPDX-License-Identifier: Apache-2.0
// What the queue commands share: reaching the agent, mapping its errors to exit codes, and
// the small text helpers of their tables.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "core/result.h"

namespace cardiac::cli {

// Sends `request` to the agent of `state_dir_flag` (else CARDIAC_STATE_DIR, the configuration
// file, /var/lib/cardiac). On failure prints "cardiac <command>: <error>" to ctx.err and sets
// `exit_code` (2 for a bad request or an unknown job, 3 when the agent cannot be reached or
// refuses).
Result<nlohmann::json> queue_call(Context& ctx, std::string_view command,
                                  const std::string& state_dir_flag, const nlohmann::json& request,
                                  int& exit_code);

// The exit code for an error answered by the agent.
int exit_code_for(const Error& e);

// "1h 02m" from seconds; "-" for a missing value.
std::string short_duration(const nlohmann::json& seconds);
// "0,1,5" from a JSON array of GPU indices.
std::string gpu_list(const nlohmann::json& indices);
// A table cell: the text cut to `width` characters with "…" when longer.
std::string cell(std::string_view text, std::size_t width);

}  // namespace cardiac::cli
