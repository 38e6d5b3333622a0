// SPDX-License-Identifier: Apache-2.0
// The API token: what every HTTP mutation must present. Made at the agent's first start into a
// file only the agent's user can read, and reused afterwards.
#pragma once

#include <string>

#include "core/result.h"

namespace cardiac::agent {

inline constexpr const char* kApiTokenFile = "api-token";

std::string api_token_path(const std::string& state_dir);

// The token in <state_dir>/api-token, created (256 random bits, hex, mode 0600) when the file
// does not exist. An existing file must be a regular file of the agent's user; looser
// permissions are tightened to 0600 (with a warning), an empty or unreadable one is an error
// naming the file.
[[nodiscard]] Result<std::string> load_or_create_api_token(const std::string& state_dir);

}  // namespace cardiac::agent
