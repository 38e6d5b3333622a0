// SPDX-License-Identifier: Apache-2.0
// Locating and opening the agent's store for the read commands.
#include "cli/store_access.h"

#include <cstdlib>
#include <filesystem>

#include "config/config.h"
#include "store/access.h"
#include "store/schema.h"

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

Result<store::Db> open_agent_store_for_writing(const std::string& state_dir) {
  std::string path = state_dir + "/cardiac.db";
  if (!std::filesystem::exists(path)) {
    return fail(
        Error::not_found("no agent store here: start `cardiac agent` or pass --state-dir", path));
  }
  auto db = store::open_store(path);
  if (!db) return fail(store::explain_store_error(db.error(), path));
  return db;
}

}  // namespace cardiac::cli
