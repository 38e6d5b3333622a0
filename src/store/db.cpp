// SPDX-License-Identifier: Apache-2.0
// SQLite connection, statement and transaction wrappers.
#include "store/db.h"

#include <sqlite3.h>

#include <cstring>
#include <string>
#include <unordered_map>

#include "core/format.h"

namespace cardiac::store {
namespace {

ErrorCode code_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorCode::kUnavailable;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return ErrorCode::kPermission;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorCode::kParse;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
      return ErrorCode::kInvalidArgument;
    case SQLITE_NOTFOUND:
      return ErrorCode::kNotFound;
    default:
      return ErrorCode::kIo;
  }
}

// Long SQL would drown the message; the start identifies the statement.
std::string shorten(std::string_view sql) {
  constexpr std::size_t kMax = 120;
  if (sql.size() <= kMax) return std::string(sql);
  return std::string(sql.substr(0, kMax)) + "...";
}

Error make_error(sqlite3* db, int rc, std::string_view path, std::string_view what) {
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  // SQLite's "unable to open database file" does not say why; the OS error does.
  int sys = db != nullptr ? sqlite3_system_errno(db) : 0;
  if ((rc & 0xff) == SQLITE_CANTOPEN && sys != 0) {
    message += fmt::format(" ({})", std::strerror(sys));
  }
  Error e{code_for(rc), std::move(message), fmt::format("database {}: {}", path, shorten(what))};
  if ((rc & 0xff) == SQLITE_CANTOPEN && (sys == ENOENT || sys == ENOTDIR)) {
    e.code = ErrorCode::kNotFound;
  }
  if ((rc & 0xff) == SQLITE_CANTOPEN && (sys == EACCES || sys == EPERM)) {
    e.code = ErrorCode::kPermission;
  }
  return e;
}

// A file name as the path of a file: URI (RFC 3986 percent-encoding of what would end or
// escape the path).
std::string uri_path(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#' || static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

// ---- Statement ----

Statement::Statement(Statement&& other) noexcept
    : stmt_(other.stmt_),
      db_(other.db_),
      lent_(other.lent_),
      bind_error_(std::move(other.bind_error_)) {
  other.stmt_ = nullptr;
  other.lent_ = nullptr;
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    release();
    stmt_ = other.stmt_;
    db_ = other.db_;
    lent_ = other.lent_;
    bind_error_ = std::move(other.bind_error_);
    other.stmt_ = nullptr;
    other.lent_ = nullptr;
  }
  return *this;
}

Statement::~Statement() {
  release();
}

void Statement::release() noexcept {
  if (lent_ != nullptr) {
    // Whatever a step left (an error, an unfinished read) goes with the reset; the next
    // user starts from a clean statement.
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *lent_ = false;
  } else {
    sqlite3_finalize(stmt_);
  }
  stmt_ = nullptr;
  lent_ = nullptr;
}

void Statement::note_bind(int rc, int index) {
  if (rc != SQLITE_OK && !bind_error_) {
    bind_error_ = db_->error(rc, fmt::format("bind #{} of {}", index, sqlite3_sql(stmt_)));
  }
}

Statement& Statement::bind_null(int index) {
  note_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Statement& Statement::bind_int64(int index, std::int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind_double(int index, double value) {
  note_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view value) {
  note_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view value) {
  note_bind(sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT), index);
  return *this;
}

Result<bool> Statement::step() {
  if (bind_error_) {
    Error e = std::move(*bind_error_);
    bind_error_.reset();
    return fail(std::move(e));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error e = db_->error(rc, sqlite3_sql(stmt_));
  // Leave the statement reusable after a failure (e.g. SQLITE_BUSY).
  sqlite3_reset(stmt_);
  return fail(std::move(e));
}

Status Statement::run() {
  for (;;) {
    auto row = step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
  }
  sqlite3_reset(stmt_);
  return {};
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_.reset();
}

bool Statement::column_is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
std::int64_t Statement::column_int64(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
double Statement::column_double(int col) const {
  return sqlite3_column_double(stmt_, col);
}

std::string Statement::column_text(int col) const {
  const auto* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string_view Statement::column_blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  if (data == nullptr) return {};
  return {static_cast<const char*>(data),
          static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))};
}

std::optional<std::int64_t> Statement::column_opt_int64(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return column_int64(col);
}

std::optional<double> Statement::column_opt_double(int col) const {
  if (column_is_null(col)) return std::nullopt;
  return column_double(col);
}

// ---- Db ----

void Db::Closer::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

Db::~Db() = default;

struct Db::StatementCache {
  struct Entry {
    sqlite3_stmt* stmt = nullptr;
    bool lent = false;
  };
  std::unordered_map<std::string, Entry> entries;
};

void Db::CacheDeleter::operator()(StatementCache* cache) const {
  for (auto& [sql, entry] : cache->entries) sqlite3_finalize(entry.stmt);
  delete cache;  // NOLINT(cppcoreguidelines-owning-memory): the unique_ptr's deleter
}

std::int64_t sqlite_memory_used() {
  return sqlite3_memory_used();
}

Result<Db> Db::open(const std::string& path, const OpenOptions& options) {
  sqlite3* raw = nullptr;
  int flags = options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  std::string name = path;
  if (options.read_only && options.immutable) {
    flags |= SQLITE_OPEN_URI;
    name = "file:" + uri_path(path) + "?immutable=1";
  }
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  std::unique_ptr<sqlite3, Closer> handle(raw);  // closes even when open failed
  if (rc != SQLITE_OK) return fail(make_error(raw, rc, path, "open"));
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);

  Db db(std::move(handle), path);
  if (options.mmap_bytes > 0) {
    CARDIAC_TRY(db.exec(fmt::format("PRAGMA mmap_size={}", options.mmap_bytes)));
  }
  if (options.cache_kib > 0) {
    CARDIAC_TRY(db.exec(fmt::format("PRAGMA cache_size=-{}", options.cache_kib)));
  }
  if (options.read_only) {
    // Reading the journal mode reads the header (a file that is not a database fails here)
    // and, unlike setting it, writes nothing.
    auto mode = db.query_text("PRAGMA journal_mode");
    if (!mode) return fail(std::move(mode).error());
    CARDIAC_TRY(db.exec("PRAGMA query_only=ON"));
    return db;
  }
  // The first pragma reads the header: a file that is not a database fails here, not later.
  auto mode = db.query_text("PRAGMA journal_mode=WAL");
  if (!mode) return fail(std::move(mode).error());
  if (!*mode || **mode != "wal") {
    return fail(Error{ErrorCode::kUnsupported,
                      fmt::format("WAL journal mode not available (got '{}')", mode->value_or("")),
                      fmt::format("database {}", path)});
  }
  // NORMAL in WAL mode: a power loss may drop the last commits but never corrupts the file;
  // FULL would fsync on every sample batch for no gain in a monitoring history.
  CARDIAC_TRY(db.exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"));
  return db;
}

Status Db::exec(std::string_view sql) {
  std::string owned(sql);  // sqlite3_exec wants a terminated string
  char* message = nullptr;
  int rc = sqlite3_exec(db_.get(), owned.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);
  if (rc != SQLITE_OK) return fail(error(rc, sql));
  return {};
}

Result<Statement> Db::prepare(std::string_view sql) const {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return fail(error(rc, sql));
  }
  return Statement(stmt, this);
}

Result<Statement> Db::cached(std::string_view sql) const {
  if (!cache_) cache_.reset(new StatementCache);  // NOLINT(cppcoreguidelines-owning-memory)
  auto& entries = cache_->entries;
  auto it = entries.find(std::string(sql));
  if (it == entries.end()) {
    auto fresh = prepare(sql);
    if (!fresh) return fail(std::move(fresh).error());
    it = entries.emplace(std::string(sql), StatementCache::Entry{fresh->stmt_}).first;
    fresh->stmt_ = nullptr;  // owned by the cache from here on
  } else if (it->second.lent) {
    return prepare(sql);
  }
  it->second.lent = true;
  return Statement(it->second.stmt, this, &it->second.lent);
}

Result<std::optional<std::int64_t>> Db::query_int64(std::string_view sql) const {
  auto st = prepare(sql);
  if (!st) return fail(std::move(st).error());
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  if (!*row) return std::optional<std::int64_t>{};
  return st->column_opt_int64(0);
}

Result<std::optional<std::string>> Db::query_text(std::string_view sql) const {
  auto st = prepare(sql);
  if (!st) return fail(std::move(st).error());
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  if (!*row || st->column_is_null(0)) return std::optional<std::string>{};
  return std::optional<std::string>(st->column_text(0));
}

std::int64_t Db::changes() const {
  return sqlite3_changes64(db_.get());
}

std::int64_t Db::total_changes() const {
  return sqlite3_total_changes64(db_.get());
}

std::int64_t Db::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_.get());
}

Error Db::error(int rc, std::string_view what) const {
  return make_error(db_.get(), rc, path_, what);
}

// ---- Transaction ----

namespace {

// BEGIN and COMMIT kept prepared: the sampler opens a transaction every flush, and parsing the
// two statements each time was most of what an empty one cost.
Status run_cached(Db& db, std::string_view sql) {
  auto st = db.cached(sql);
  if (!st) return fail(std::move(st).error());
  return st->run();
}

}  // namespace

Result<Transaction> Transaction::begin(Db& db) {
  CARDIAC_TRY(run_cached(db, "BEGIN IMMEDIATE"));
  return Transaction(db);
}

Transaction::~Transaction() {
  // A failed ROLLBACK leaves nothing to do in a destructor; SQLite rolls back on close anyway.
  if (db_ != nullptr) (void)db_->exec("ROLLBACK");
}

Status Transaction::commit() {
  if (db_ == nullptr) return fail(Error::internal("commit of a finished transaction"));
  auto st = run_cached(*db_, "COMMIT");
  if (st) db_ = nullptr;  // on failure the destructor rolls back
  return st;
}

}  // namespace cardiac::store
