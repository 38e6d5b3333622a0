// SPDX-License-Identifier: Apache-2.0
// The [queue] table of cardiac.toml: the queue's settings, the multifactor weights and the
// fair-share account tree ([[queue.account]], [[queue.user]]).
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "config/config.h"

namespace cardiac::config {

// Reads [queue] into `s`. Errors name file:line:column: unknown keys, wrong types, an account
// listed twice, a parent or user account that is not listed, a cycle of parents.
[[nodiscard]] Status read_queue(const toml::table& t, std::string_view origin, QueueSettings& s);

}  // namespace cardiac::config
