// SPDX-License-Identifier: Apache-2.0
// The [agent] table and the [[notifier]] array of cardiac.toml.
#pragma once

#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "config/config.h"

namespace cardiac::config {

[[nodiscard]] Status read_agent(const toml::table& t, std::string_view origin, AgentSettings& s);
[[nodiscard]] Status read_notifiers(const toml::table& root, std::string_view origin,
                                    std::vector<NotifierSettings>& out);

// Splits "127.0.0.1:9847" or "[::1]:9847" into address and port; errors name `what`.
[[nodiscard]] Result<std::pair<std::string, int>> split_listen(std::string_view listen);

}  // namespace cardiac::config
