// SPDX-License-Identifier: Apache-2.0
// Where the read commands find the agent's store: --state-dir, then CARDIAC_STATE_DIR, then
// the configuration file, then /var/lib/cardiac.
#pragma once

#include <string>

#include "core/result.h"
#include "store/db.h"

namespace cardiac::cli {

std::string resolve_state_dir(const std::string& flag);
// Opens <state dir>/cardiac.db (migrating it if needed); errors name the file.
Result<store::Db> open_agent_store(const std::string& state_dir);

}  // namespace cardiac::cli
