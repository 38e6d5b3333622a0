// SPDX-License-Identifier: Apache-2.0
// Who may read the store: the state directory's and the store files' modes and group, the
// read-only way in for the commands that only look, and plain words for a store that cannot
// be used.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "store/db.h"

namespace cardiac::store {

// The store holds every job's environment: by default only its owner reads it. A group
// (`[agent] group`) may be given read access; nobody else ever is.
struct StoreAccess {
  mode_t dir_mode = 0700;
  mode_t file_mode = 0600;
  std::optional<gid_t> group;  // files and directory get this group
};

// The modes for an owner-only store, or one readable by `group`. `reachable`: other users
// must still reach a socket in the directory by name (the job queue), so they get search
// (x) permission on it, never read (list) or write.
StoreAccess store_access(std::optional<gid_t> group, bool reachable);

// The gid of group `name`; errors name the group.
[[nodiscard]] Result<gid_t> group_id(const std::string& name);

// Creates `dir` (and its parents) with `a.dir_mode`, sets the mode and group of the directory
// and of cardiac.db, -wal and -shm in it (creating an empty cardiac.db with `a.file_mode`, so
// SQLite, which gives the -wal and -shm the database's mode, never makes them world-readable).
// Returns one line per mode or group that was changed, for the log. Errors name the file.
[[nodiscard]] Result<std::vector<std::string>> secure_state_dir(const std::string& dir,
                                                                const StoreAccess& a);

// Whose file a store error is about, which decides the advice: the agent's own store (stop
// the agent, move the damaged file aside, start over) or a file a user named as input (the
// doctor's --db), which is only said not to be a store: moving it is none of our business.
enum class StoreFile { kAgentStore, kInput };

// Opens an existing store read-only, for commands that only look: nothing is created,
// migrated or written. A missing file, one without tables (0 bytes: no agent wrote it yet), a
// schema from another cardiac version, or a file that cannot be read are errors in plain
// words that name the file.
[[nodiscard]] Result<Db> open_store_read_only(const std::string& path,
                                              StoreFile file = StoreFile::kAgentStore);

// `e` (from opening `path`) said in plain words: what is wrong with the file and what to do.
// A file that is not a database or is damaged gets the recovery hint (move it aside) when it
// is the agent's store, and "not a cardiac store" without advice when it is an input; a file
// that may not be read names the permission. Other errors are returned as they are.
[[nodiscard]] Error explain_store_error(const Error& e, const std::string& path,
                                        StoreFile file = StoreFile::kAgentStore);

}  // namespace cardiac::store
