// SPDX-License-Identifier: Apache-2.0
// Backup and restore of the agent's store. The copy side talks to SQLite directly: the backup
// API needs the raw handles, and a copy must be opened without the store's pragmas (WAL on an
// empty file would fix its page size before the source's pages arrive).
#include "store/backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "core/format.h"
#include "store/lock.h"
#include "store/schema.h"

namespace cardiac::store {
namespace {

constexpr const char* kKeptSuffix = ".before-restore";
constexpr const char* kStagedSuffix = ".restore-tmp";
// The files of a store that move together: SQLite's own and the writer's tail.
constexpr const char* kStoreSuffixes[] = {"", "-wal", "-shm", "-tail0", "-tail1"};
constexpr int kBusyTries = 100;

struct RawCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using RawDb = std::unique_ptr<sqlite3, RawCloser>;

Error sqlite_error(sqlite3* db, int rc, const std::string& path, std::string_view what) {
  std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (rc == SQLITE_NOTADB || msg.find("not a database") != std::string::npos) {
    return Error::invalid("not a SQLite database, so not a cardiac store", path);
  }
  if (rc == SQLITE_CORRUPT || msg.find("malformed") != std::string::npos) {
    return Error::invalid(fmt::format("the database is damaged ({})", msg), path);
  }
  return Error{ErrorCode::kIo, fmt::format("{}: {}", what, msg), path};
}

Result<RawDb> open_raw(const std::string& path, bool read_only) {
  sqlite3* raw = nullptr;
  const int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  RawDb db(raw);
  if (rc != SQLITE_OK) return fail(sqlite_error(raw, rc, path, "cannot open"));
  sqlite3_busy_timeout(raw, 5000);
  return db;
}

Status exec(sqlite3* db, const std::string& path, const std::string& sql) {
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  if (msg != nullptr) sqlite3_free(msg);
  if (rc != SQLITE_OK) return fail(sqlite_error(db, rc, path, sql));
  return {};
}

// Every row of a one-column query, as text.
Result<std::vector<std::string>> column(sqlite3* db, const std::string& path,
                                        const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return fail(sqlite_error(db, rc, path, sql));
  std::vector<std::string> out;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(stmt, 0);
    out.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return fail(sqlite_error(db, rc, path, sql));
  return out;
}

// Copies the whole of `src` into `dst` in one backup step: one read transaction on the
// source, so the copy is one commit's snapshot. A step of a few pages at a time would restart
// whenever the agent commits, and might never end under a busy writer.
Status copy_database(sqlite3* src, sqlite3* dst, const std::string& src_path,
                     const std::string& dst_path) {
  sqlite3_backup* b = sqlite3_backup_init(dst, "main", src, "main");
  if (b == nullptr) return fail(sqlite_error(dst, sqlite3_errcode(dst), dst_path, "backup"));
  int rc = SQLITE_OK;
  for (int i = 0; i < kBusyTries; ++i) {
    rc = sqlite3_backup_step(b, -1);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
    sqlite3_sleep(50);  // another connection holds a lock for a moment (WAL recovery)
  }
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return fail(sqlite_error(src, rc, src_path, "backup of the store"));
  return {};
}

Status integrity_ok(sqlite3* db, const std::string& path) {
  auto rows = column(db, path, "PRAGMA integrity_check");
  if (!rows) return fail(rows.error());
  if (rows->empty() || (*rows)[0] != "ok") {
    return fail(Error::invalid(
        fmt::format("fails SQLite's integrity check: {}", rows->empty() ? "no answer" : (*rows)[0]),
        path));
  }
  return {};
}

std::string dir_of(const std::string& path) {
  auto d = std::filesystem::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

// Where side file `name` of the store at `db_path` lies.
std::string side_path(const std::string& db_path, std::string_view name) {
  if (name.starts_with("/")) return dir_of(db_path) + std::string(name);
  return db_path + std::string(name);
}

// The file's bytes; nullopt when it does not exist.
Result<std::optional<std::string>> read_whole(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail(Error::io(path, errno));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return fail(Error::io(path, e));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return std::optional<std::string>(std::move(out));
}

Status sync_file(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return fail(Error::io(path, errno));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return fail(Error::io(path, e));
  return {};
}

// Creates `path` anew with mode 0600 and `data`, synced.
Status write_new(const std::string& path, std::string_view data) {
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail(Error::io(path, errno));
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return fail(Error::io(path, e));
    }
    done += static_cast<std::size_t>(n);
  }
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return fail(Error::io(path, e));
  return {};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void remove_db_files(const std::string& path) {
  for (const char* s : {"", "-journal", "-wal", "-shm"}) ::unlink((path + s).c_str());
}

// An empty file with mode 0600 for SQLite to fill: SQLite gives its journal the database's
// mode, so nothing of the copy is ever readable by others, whatever the umask.
Status create_private(const std::string& path) {
  remove_db_files(path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail(Error::io(path, errno));
  ::close(fd);
  return {};
}

}  // namespace

Result<BackupCheck> check_backup(const std::string& backup_path) {
  struct stat st {};
  if (::stat(backup_path.c_str(), &st) != 0) {
    if (errno == ENOENT) return fail(Error::not_found("no such file", backup_path));
    return fail(Error::io(backup_path, errno));
  }
  if (!S_ISREG(st.st_mode)) return fail(Error::invalid("not a regular file", backup_path));
  auto db_r = open_raw(backup_path, true);
  if (!db_r) return fail(db_r.error());
  auto db = std::move(*db_r);
  auto tables = column(db.get(), backup_path,
                       "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
  if (!tables) return fail(tables.error());
  auto has = [&](std::string_view name) {
    return std::find(tables->begin(), tables->end(), name) != tables->end();
  };
  if (!has("schema_version") || !has("metrics")) {
    return fail(Error::invalid(
        tables->empty() ? "an empty SQLite database, not a cardiac store"
                        : "a SQLite database but not a cardiac store (no schema_version and "
                          "metrics tables)",
        backup_path));
  }
  CARDIAC_TRY(integrity_ok(db.get(), backup_path));
  auto version = column(db.get(), backup_path, "SELECT max(version) FROM schema_version");
  if (!version) return fail(version.error());
  BackupCheck out;
  if (!version->empty()) {
    const std::string& v = (*version)[0];
    if (std::from_chars(v.data(), v.data() + v.size(), out.schema_version).ec != std::errc{}) {
      out.schema_version = 0;
    }
  }
  if (out.schema_version <= 0) {
    return fail(Error::invalid("a cardiac store with no schema version recorded", backup_path));
  }
  if (out.schema_version > latest_schema_version()) {
    return fail(Error::unsupported(
        fmt::format("schema version {} is newer than this cardiac understands ({}); restore it "
                    "with the cardiac that made it",
                    out.schema_version, latest_schema_version()),
        backup_path));
  }
  if (has(kBackupFilesTable)) {
    auto names = column(db.get(), backup_path,
                        fmt::format("SELECT name FROM {} ORDER BY name", kBackupFilesTable));
    if (!names) return fail(names.error());
    for (const auto& n : *names) {
      bool known = false;
      for (const char* s : kBackupSideFiles) known = known || n == s;
      if (!known) {
        return fail(Error::invalid(
            fmt::format("{} names a file cardiac does not restore: {}", kBackupFilesTable, n),
            backup_path));
      }
    }
    out.side_files = *names;
  }
  return out;
}

Result<BackupSummary> backup_store(const std::string& db_path, const std::string& out_path) {
  // The side files first, the database second: a seal that lands in between is in the copied
  // database, and the tail read before it still holds every record the seal did not take.
  std::vector<std::pair<std::string, std::string>> side;
  for (const char* name : kBackupSideFiles) {
    auto data_r = read_whole(side_path(db_path, name));
    if (!data_r) return fail(data_r.error());
    auto data = std::move(*data_r);
    if (data) side.emplace_back(name, std::move(*data));
  }
  if (!exists(db_path)) {
    return fail(Error::not_found("no agent store here: pass --db with the store's path", db_path));
  }
  auto src_r = open_raw(db_path, true);
  if (!src_r) return fail(src_r.error());
  auto src = std::move(*src_r);

  const std::string tmp = out_path + ".tmp";
  CARDIAC_TRY(create_private(tmp));
  auto written = [&]() -> Result<int> {
    auto dst_r = open_raw(tmp, false);
    if (!dst_r) return fail(dst_r.error());
    auto dst = std::move(*dst_r);
    CARDIAC_TRY(copy_database(src.get(), dst.get(), db_path, tmp));
    // One file: no -wal beside the copy to lose when it is moved.
    CARDIAC_TRY(exec(dst.get(), tmp, "PRAGMA journal_mode=DELETE"));
    CARDIAC_TRY(exec(dst.get(), tmp,
                     fmt::format("CREATE TABLE {} (name TEXT PRIMARY KEY, data BLOB NOT NULL)",
                                 kBackupFilesTable)));
    for (const auto& [name, data] : side) {
      sqlite3_stmt* stmt = nullptr;
      const std::string sql = fmt::format("INSERT INTO {} VALUES (?, ?)", kBackupFilesTable);
      int rc = sqlite3_prepare_v2(dst.get(), sql.c_str(), -1, &stmt, nullptr);
      if (rc == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, name.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob64(stmt, 2, data.data(), data.size(), SQLITE_TRANSIENT);
        rc = sqlite3_step(stmt);
        sqlite3_finalize(stmt);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
      }
      if (rc != SQLITE_OK) return fail(sqlite_error(dst.get(), rc, tmp, "saving " + name));
    }
    CARDIAC_TRY(integrity_ok(dst.get(), tmp));
    return 0;
  }();
  src.reset();
  if (!written) {
    remove_db_files(tmp);
    return fail(written.error());
  }
  if (::chmod(tmp.c_str(), 0600) != 0) return fail(Error::io(tmp, errno));
  CARDIAC_TRY(sync_file(tmp, false));
  if (::rename(tmp.c_str(), out_path.c_str()) != 0) {
    const int e = errno;
    remove_db_files(tmp);
    return fail(Error::io(out_path, e));
  }
  CARDIAC_TRY(sync_file(dir_of(out_path), true));
  auto check_r = check_backup(out_path);
  if (!check_r) return fail(check_r.error());
  auto check = std::move(*check_r);
  struct stat st {};
  ::stat(out_path.c_str(), &st);
  BackupSummary s;
  s.path = out_path;
  s.bytes = st.st_size;
  s.schema_version = check.schema_version;
  s.side_files = check.side_files;
  return s;
}

Result<RestoreSummary> restore_store(const std::string& backup_path, const std::string& db_path,
                                     bool force) {
  auto check_r = check_backup(backup_path);
  if (!check_r) return fail(check_r.error());
  auto check = std::move(*check_r);
  const std::string dir = dir_of(db_path);
  if (!std::filesystem::is_directory(dir)) {
    return fail(Error::not_found("the store's directory does not exist", dir));
  }
  auto lock_r = try_lock_store(db_path, true);
  if (!lock_r) return fail(lock_r.error());
  auto lock = std::move(*lock_r);
  if (!lock) {
    return fail(Error::unavailable(
        fmt::format("an agent is running on this store (it holds {}): stop it first "
                    "(systemctl stop cardiac), restore, then start it again",
                    store_lock_path(db_path)),
        db_path));
  }
  // Every file the current store has, and where it goes.
  std::vector<std::pair<std::string, std::string>> keep;
  for (const char* s : kStoreSuffixes) {
    keep.emplace_back(db_path + s, db_path + kKeptSuffix + s);
  }
  for (const char* name : kBackupSideFiles) {
    if (name[0] == '/') {
      const std::string p = side_path(db_path, name);
      keep.emplace_back(p, p + kKeptSuffix);
    }
  }
  for (const auto& [from, to] : keep) {
    if (exists(to) && !force) {
      return fail(Error::invalid(
          fmt::format("{} is there from an earlier restore: move it away, or pass --force to "
                      "replace it",
                      to),
          db_path));
    }
  }

  // Stage the copy beside the store, so that the swap is renames within one file system.
  const std::string staged = db_path + kStagedSuffix;
  std::vector<std::pair<std::string, std::string>> staged_files;  // staged → final
  auto staged_ok = [&]() -> Status {
    CARDIAC_TRY(create_private(staged));
    auto src_r = open_raw(backup_path, true);
    if (!src_r) return fail(src_r.error());
    auto src = std::move(*src_r);
    auto dst_r = open_raw(staged, false);
    if (!dst_r) return fail(dst_r.error());
    auto dst = std::move(*dst_r);
    CARDIAC_TRY(copy_database(src.get(), dst.get(), backup_path, staged));
    src.reset();
    for (const auto& name : check.side_files) {
      sqlite3_stmt* stmt = nullptr;
      const std::string sql = fmt::format("SELECT data FROM {} WHERE name = ?", kBackupFilesTable);
      int rc = sqlite3_prepare_v2(dst.get(), sql.c_str(), -1, &stmt, nullptr);
      std::string data;
      if (rc == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, name.c_str(), -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) {
          const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt, 0));
          data.assign(p != nullptr ? p : "",
                      static_cast<std::size_t>(sqlite3_column_bytes(stmt, 0)));
          rc = SQLITE_OK;
        }
        sqlite3_finalize(stmt);
      }
      if (rc != SQLITE_OK) return fail(sqlite_error(dst.get(), rc, backup_path, "reading " + name));
      const std::string final_path = side_path(db_path, name);
      const std::string tmp = final_path + kStagedSuffix;
      CARDIAC_TRY(write_new(tmp, data));
      staged_files.emplace_back(tmp, final_path);
    }
    CARDIAC_TRY(exec(dst.get(), staged, fmt::format("DROP TABLE IF EXISTS {}", kBackupFilesTable)));
    // The store's own mode (WAL) comes back when the agent opens it; until then one file.
    CARDIAC_TRY(exec(dst.get(), staged, "PRAGMA journal_mode=DELETE"));
    CARDIAC_TRY(integrity_ok(dst.get(), staged));
    dst.reset();
    CARDIAC_TRY(sync_file(staged, false));
    return {};
  }();
  auto drop_staged = [&] {
    remove_db_files(staged);
    for (const auto& [tmp, final_path] : staged_files) ::unlink(tmp.c_str());
  };
  if (!staged_ok) {
    drop_staged();
    return fail(staged_ok.error());
  }
  staged_files.insert(staged_files.begin(), {staged, db_path});

  // The swap: the current files aside, the staged ones in; any failure undoes what was done.
  std::vector<std::pair<std::string, std::string>> done;
  auto undo = [&] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      ::rename(it->second.c_str(), it->first.c_str());
    }
  };
  auto move = [&](const std::string& from, const std::string& to) -> Status {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      const int e = errno;
      undo();
      drop_staged();
      return fail(Error::io(fmt::format("{} -> {}", from, to), e));
    }
    done.emplace_back(from, to);
    return {};
  };
  RestoreSummary out;
  out.schema_version = check.schema_version;
  out.side_files = check.side_files;
  // With force, every file of the earlier kept store goes, not only those the current store
  // has: an old -wal left beside a new .before-restore would be replayed into it.
  if (force) {
    for (const auto& [from, to] : keep) ::unlink(to.c_str());
  }
  for (const auto& [from, to] : keep) {
    if (!exists(from)) continue;
    CARDIAC_TRY(move(from, to));
    if (out.kept.empty() && from == db_path) out.kept = to;
  }
  for (const auto& [tmp, final_path] : staged_files) CARDIAC_TRY(move(tmp, final_path));
  CARDIAC_TRY(sync_file(dir, true));
  return out;
}

}  // namespace cardiac::store
