// SPDX-License-Identifier: Apache-2.0
// RAII wrapper over one SQLite connection: open with the store's pragmas, statements, transactions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cardiac::store {

class Db;

// A prepared statement. Binds are 1-based like SQLite's; a failed bind is remembered and
// reported by the next step()/run(), so binds can be chained without checking each one.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind_null(int index);
  Statement& bind_int64(int index, std::int64_t value);
  Statement& bind_double(int index, double value);
  Statement& bind_text(int index, std::string_view value);
  // Binds the bytes as a BLOB (bind() of a string binds TEXT); copied, so `value` may go away.
  Statement& bind_blob(int index, std::string_view value);

  // Binds by C++ type: integers (and bool) as INTEGER, floating point as REAL, strings as
  // TEXT, std::nullopt or an empty optional as NULL. Unsigned 64-bit values above INT64_MAX
  // wrap, as SQLite has no unsigned type.
  template <class T>
  Statement& bind(int index, const T& value);
  // bind(1, a), bind(2, b), ...
  template <class... A>
  Statement& bind_all(const A&... values) {
    int i = 1;
    (bind(i++, values), ...);
    return *this;
  }

  // Advances: true when a row is available, false when done.
  [[nodiscard]] Result<bool> step();
  // Steps to completion ignoring rows, then resets (binds are kept).
  [[nodiscard]] Status run();
  // Rewinds for another execution and clears the binds.
  void reset();

  [[nodiscard]] bool column_is_null(int col) const;
  [[nodiscard]] std::int64_t column_int64(int col) const;
  [[nodiscard]] double column_double(int col) const;
  [[nodiscard]] std::string column_text(int col) const;
  // The bytes of a BLOB (or TEXT) column; valid until the next step(), reset() or column call
  // on this column.
  [[nodiscard]] std::string_view column_blob(int col) const;
  [[nodiscard]] std::optional<std::int64_t> column_opt_int64(int col) const;
  [[nodiscard]] std::optional<double> column_opt_double(int col) const;

 private:
  friend class Db;
  Statement(sqlite3_stmt* stmt, const Db* db, bool* lent = nullptr)
      : stmt_(stmt), db_(db), lent_(lent) {}
  void note_bind(int rc, int index);
  // Finalizes the statement, or hands a cached one back to its connection.
  void release() noexcept;

  sqlite3_stmt* stmt_ = nullptr;
  const Db* db_ = nullptr;  // for error messages (file name, SQL)
  bool* lent_ = nullptr;    // a cached statement's "in use" mark, cleared on release
  std::optional<Error> bind_error_;
};

struct OpenOptions {
  // How long a writer waits for another connection's lock before failing with "busy".
  int busy_timeout_ms = 5000;
  // SQLITE_OPEN_READONLY: nothing is created or written (not even the journal mode), so a user
  // who may only read the file gets answers, never "attempt to write a readonly database".
  bool read_only = false;
  // With read_only: SQLite's immutable=1, for a WAL database without a -wal file (no writer
  // since its last clean close) in a directory where we may not create the -shm.
  bool immutable = false;
  // SQLite's mmap_size: pages of the database file are read in place from the OS page cache
  // rather than copied into the connection's cache (2 MB by default) a read(2) at a time.
  // For the connections that answer history queries: a week of one series touches about
  // 12 MB of pages. The mapping is shared and clean, so the kernel may drop it under pressure.
  std::int64_t mmap_bytes = 0;
  // SQLite's cache_size, in KiB of page cache for this connection; 0: SQLite's default
  // (2 MiB). See kept_options().
  std::int64_t cache_kib = 0;
};

// The options of a connection that answers queries: kQueryMmapBytes of the file mapped.
inline constexpr std::int64_t kQueryMmapBytes = std::int64_t{256} << 20;
[[nodiscard]] inline OpenOptions query_options() {
  OpenOptions o;
  o.mmap_bytes = kQueryMmapBytes;
  return o;
}

// A connection the agent keeps open while it runs (its writer, reader, queue and maintenance
// connections): its page cache capped at kKeptCacheKib. SQLite's default cache keeps up to
// 2 MiB of pages per connection, filled with pages touched once (a seal's, a roll-up's); with
// the cap the agent's peaks were about 0.9 MiB lower and its level 0.1-0.25 MiB lower over
// 50 minutes (bench/README.md). What these connections touch again and again (the tail log's
// row, the series table, the upper levels of the chunk index) fits in far less; the rest is a
// read(2) from the OS's page cache, or a mapped page for the reader.
inline constexpr std::int64_t kKeptCacheKib = 256;
[[nodiscard]] inline OpenOptions kept_options(OpenOptions o = {}) {
  o.cache_kib = kKeptCacheKib;
  return o;
}

// Bytes SQLite has allocated in this process (every connection's page cache, statements and
// schema): sqlite3_memory_used().
[[nodiscard]] std::int64_t sqlite_memory_used();

// One connection. Move-only; statements and transactions refer to it, so it must outlive them
// and must not be moved while they exist. Not thread-safe: use one connection per thread.
class Db {
 public:
  // Opens or creates `path` with journal_mode=WAL, synchronous=NORMAL, foreign_keys=ON and a
  // busy timeout. A missing or unwritable directory, or a file that is not a SQLite database,
  // is an error whose context names the file. With `read_only` the file must exist and is
  // opened as it is (query_only).
  [[nodiscard]] static Result<Db> open(const std::string& path, const OpenOptions& options = {});

  Db(Db&&) noexcept = default;
  Db& operator=(Db&&) noexcept = default;
  ~Db();

  // Runs one or more statements without results (DDL, pragmas).
  [[nodiscard]] Status exec(std::string_view sql);
  [[nodiscard]] Result<Statement> prepare(std::string_view sql) const;
  // The same, but the statement stays prepared on this connection: dropping the Statement
  // resets it and clears its binds, and the next cached() of the same text hands it out
  // again. For the few fixed queries a loop runs every tick, where parsing and planning the
  // SQL costs more than running it on a small table. Only for SQL texts from a small fixed
  // set (every distinct text is kept until the connection closes). While one is in use, a
  // second request for the same text gets a statement of its own.
  [[nodiscard]] Result<Statement> cached(std::string_view sql) const;
  // First column of the first row; nullopt when there is no row or the value is NULL.
  [[nodiscard]] Result<std::optional<std::int64_t>> query_int64(std::string_view sql) const;
  [[nodiscard]] Result<std::optional<std::string>> query_text(std::string_view sql) const;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] sqlite3* handle() const { return db_.get(); }
  [[nodiscard]] std::int64_t changes() const;
  // Rows this connection has inserted, updated or deleted since it opened: a cheap "has
  // anything been written" for what only this connection writes.
  [[nodiscard]] std::int64_t total_changes() const;
  // The rowid of the last row this connection inserted.
  [[nodiscard]] std::int64_t last_insert_rowid() const;

  // Error for result code `rc`, with SQLite's message and "path: what" as context.
  [[nodiscard]] Error error(int rc, std::string_view what) const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  // Statements kept by cached(), finalized before the connection closes (declared after it,
  // so destroyed first). Behind a pointer so a lent statement's mark never moves.
  struct StatementCache;
  struct CacheDeleter {
    void operator()(StatementCache* cache) const;
  };

  Db(std::unique_ptr<sqlite3, Closer> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}

  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  mutable std::unique_ptr<StatementCache, CacheDeleter> cache_;
};

// Write transaction guard: BEGIN IMMEDIATE on begin() (so lock contention shows up front, not
// halfway through), ROLLBACK on destruction unless commit() succeeded.
class Transaction {
 public:
  [[nodiscard]] static Result<Transaction> begin(Db& db);
  Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  [[nodiscard]] Status commit();

 private:
  explicit Transaction(Db& db) : db_(&db) {}
  Db* db_;  // null once committed or rolled back
};

namespace detail {
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
}  // namespace detail

template <class T>
Statement& Statement::bind(int index, const T& value) {
  if constexpr (std::is_same_v<T, std::nullopt_t> || std::is_same_v<T, std::nullptr_t>) {
    return bind_null(index);
  } else if constexpr (detail::IsOptional<T>::value) {
    return value ? bind(index, *value) : bind_null(index);
  } else if constexpr (std::is_integral_v<T>) {
    return bind_int64(index, static_cast<std::int64_t>(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    return bind_double(index, static_cast<double>(value));
  } else {
    return bind_text(index, std::string_view(value));
  }
}

}  // namespace cardiac::store
