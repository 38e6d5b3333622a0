// SPDX-License-Identifier: Apache-2.0
// The [agent] table and the [[notifier]] array of cardiac.toml.
#pragma once

#include <optional>
#include <string>
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

// Where a client on this host reaches the agent listening at `listen` (`agent.listen`): a
// wildcard address means this host's loopback. nullopt when it is not host:port.
struct AgentAddress {
  std::string host;
  int port = 0;
};
[[nodiscard]] std::optional<AgentAddress> agent_address(const std::string& listen);

// The token a client on this host presents to the agent: `agent.token`, else the agent's own
// token file in `state_dir` when this user may read it (root, the agent's user); "" otherwise.
[[nodiscard]] std::string agent_client_token(const AgentSettings& agent,
                                             const std::string& state_dir);

}  // namespace cardiac::config
