// SPDX-License-Identifier: Apache-2.0
// Locating and opening the agent's store for the read commands.
#include "cli/store_access.h"

#include <cstdlib>

#include "config/config.h"
#include "store/access.h"

namespace cardiac::cli {

std::string resolve_state_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("CARDIAC_STATE_DIR"); env && *env) return env;
  if (auto cfg = config::load_config(config::kDefaultConfigPath, false)) {
    return cfg->agent.state_dir;
  }
  return config::AgentSettings{}.state_dir;
}

Result<store::Db> open_agent_store(const std::string& state_dir) {
  return store::open_store_read_only(state_dir + "/cardiac.db");
}

}  // namespace cardiac::cli
