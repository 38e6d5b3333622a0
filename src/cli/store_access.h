// SPDX-License-Identifier: Apache-2.0
// Where the read commands find the agent's store: --state-dir, then CARDIAC_STATE_DIR, then
// the configuration file, then /var/lib/cardiac.
#pragma once

#include <string>

#include "core/result.h"
#include "store/db.h"

namespace cardiac::cli {

std::string resolve_state_dir(const std::string& flag);
// Opens <state dir>/cardiac.db read-only for the commands that only look: nothing is created,
// migrated or written, so any user who may read the file gets answers. Errors name the file
// and say why in plain words (missing, no tables yet, permission, not a database).
Result<store::Db> open_agent_store(const std::string& state_dir);

}  // namespace cardiac::cli
