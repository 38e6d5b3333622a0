// SPDX-License-Identifier: Apache-2.0
// `cardiac backup` and `cardiac restore`: a consistent copy of the agent's store while the
// agent runs (SQLite's online backup API), and putting one back without ever losing the
// store it replaces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace cardiac::store {

// What else a store keeps beside its SQLite file and a backup carries in its
// `cardiac_backup_files` table: the writer's unsealed tail (tail_log.h) and the serving
// watch's per-process VRAM book. Names are suffixes of the database path ("-tail0") or, with
// a leading '/', file names in its directory ("/gpu-processes.json").
inline constexpr const char* kBackupSideFiles[] = {"-tail0", "-tail1", "/gpu-processes.json"};
// The table a backup adds to the copy; restore takes it out again.
inline constexpr const char* kBackupFilesTable = "cardiac_backup_files";

struct BackupSummary {
  std::string path;        // the backup written
  std::int64_t bytes = 0;  // its size
  int schema_version = 0;
  std::vector<std::string> side_files;  // the side files it carries ("-tail0", …)
};

// Copies the store at `db_path` into `out_path` while its agent may be writing: the side files
// are read first, then the database in one step of sqlite3_backup (one read transaction, so a
// snapshot of one commit), so every sample written before the backup started is in the copy,
// sealed or in the tail. The copy is written beside `out_path` with mode 0600, checked with
// integrity_check and renamed into place (an existing backup is replaced whole or not at all).
// Errors name the file.
[[nodiscard]] Result<BackupSummary> backup_store(const std::string& db_path,
                                                 const std::string& out_path);

struct BackupCheck {
  int schema_version = 0;
  std::vector<std::string> side_files;
};

// Whether `backup_path` is a cardiac store (or a backup of one) that can be restored: a SQLite
// database that passes integrity_check, with cardiac's schema_version table at a version this
// cardiac reads or migrates. Reads only; errors name the file and say what is wrong.
[[nodiscard]] Result<BackupCheck> check_backup(const std::string& backup_path);

struct RestoreSummary {
  int schema_version = 0;
  std::string kept;  // where the replaced store went ("<db>.before-restore"), "" when none
  std::vector<std::string> side_files;
};

// Puts `backup_path` back as the store at `db_path`: refused while an agent holds the store
// (lock.h) and for a file check_backup() refuses, before anything is touched. The current
// store's files move to "<db>.before-restore" (with their -wal, -shm and tail suffixes; an
// earlier one is replaced only with `force`), the staged copy moves in, and a failure on the
// way puts the old files back. The restored files get mode 0600.
[[nodiscard]] Result<RestoreSummary> restore_store(const std::string& backup_path,
                                                   const std::string& db_path, bool force);

}  // namespace cardiac::store
