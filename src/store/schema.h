// SPDX-License-Identifier: Apache-2.0
// Versioned schema migrations for the history store.
#pragma once

#include <string>

#include "core/result.h"
#include "store/db.h"

namespace cardiac::store {

// The newest schema this build knows; equals the number of migrations.
int latest_schema_version();

// The version recorded in `schema_version`, 0 for a fresh database.
[[nodiscard]] Result<int> schema_version(const Db& db);

// Applies every migration newer than the database's version, each in its own transaction with
// its version row, so a crash leaves the database at a whole version. Running it again is a
// no-op. A database written by a newer cardiac is refused rather than guessed at.
[[nodiscard]] Status migrate(Db& db);

// Db::open + migrate: what the agent and the tests use.
[[nodiscard]] Result<Db> open_store(const std::string& path, const OpenOptions& options = {});

// In rollup tables the host is stored as this GPU number, not NULL: NULLs are distinct in a
// primary key, so INSERT OR REPLACE would duplicate host buckets instead of replacing them.
inline constexpr std::int64_t kHostGpu = -1;

}  // namespace cardiac::store
