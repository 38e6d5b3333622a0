// SPDX-License-Identifier: Apache-2.0
// Tests for the SQLite wrapper: pragmas, binds, transactions and open errors.
#include "store/db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <random>

#include "store/tests/support.h"

namespace cardiac::store {
namespace {

using testing::TempDir;

TEST(StoreDb, OpensWithWalAndPragmas) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db) << db.error().what();
  EXPECT_EQ(db->query_text("PRAGMA journal_mode").value(), "wal");
  EXPECT_EQ(db->query_int64("PRAGMA synchronous").value(), 1);  // NORMAL
  EXPECT_EQ(db->query_int64("PRAGMA foreign_keys").value(), 1);
  EXPECT_EQ(db->query_int64("PRAGMA busy_timeout").value(), 5000);
}

TEST(StoreDb, QueryConnectionsMapTheFile) {
  TempDir dir;
  auto writer = Db::open(dir.file("a.db"));
  ASSERT_TRUE(writer);
  EXPECT_EQ(writer->query_int64("PRAGMA mmap_size").value(), 0);
  auto reader = Db::open(dir.file("a.db"), query_options());
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(reader->query_int64("PRAGMA mmap_size").value(), kQueryMmapBytes);
}

// The agent's kept connections cap their page cache; others keep SQLite's default.
TEST(StoreDb, KeptConnectionsCapTheirPageCache) {
  TempDir dir;
  auto plain = Db::open(dir.file("a.db"));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->query_int64("PRAGMA cache_size").value(), -2000);
  auto kept = Db::open(dir.file("a.db"), kept_options());
  ASSERT_TRUE(kept) << kept.error().what();
  EXPECT_EQ(kept->query_int64("PRAGMA cache_size").value(), -kKeptCacheKib);
  auto reader = Db::open(dir.file("a.db"), kept_options(query_options()));
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(reader->query_int64("PRAGMA cache_size").value(), -kKeptCacheKib);
  EXPECT_EQ(reader->query_int64("PRAGMA mmap_size").value(), kQueryMmapBytes);
}

TEST(StoreDb, TypedBindsRoundTrip) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, n INTEGER)"));
  auto ins = db->prepare("INSERT INTO t VALUES (?, ?, ?, ?)");
  ASSERT_TRUE(ins);
  std::optional<int> none;
  ASSERT_TRUE(ins->bind_all(std::int64_t{-5}, 2.5, std::string("x'y"), none).run());
  auto sel = db->prepare("SELECT i, d, s, n FROM t");
  ASSERT_TRUE(sel);
  ASSERT_TRUE(sel->step().value());
  EXPECT_EQ(sel->column_int64(0), -5);
  EXPECT_DOUBLE_EQ(sel->column_double(1), 2.5);
  EXPECT_EQ(sel->column_text(2), "x'y");
  EXPECT_FALSE(sel->column_opt_int64(3));
  EXPECT_FALSE(sel->step().value());
}

TEST(StoreDb, BindOutOfRangeIsReportedByStep) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  auto st = db->prepare("SELECT ?");
  ASSERT_TRUE(st);
  auto r = st->bind_all(1, 2).step();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("bind #2"), std::string::npos) << r.error().what();
}

TEST(StoreDb, SqlErrorNamesFileAndStatement) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  auto st = db->prepare("SELECT * FROM nowhere");
  ASSERT_FALSE(st);
  const std::string what = st.error().what();
  EXPECT_NE(what.find(dir.file("a.db")), std::string::npos) << what;
  EXPECT_NE(what.find("SELECT * FROM nowhere"), std::string::npos) << what;
  EXPECT_NE(what.find("no such table"), std::string::npos) << what;
}

TEST(StoreDb, TransactionRollsBackUnlessCommitted) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec("CREATE TABLE t (i INTEGER)"));
  {
    auto tx = Transaction::begin(*db);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (1)"));
  }
  EXPECT_EQ(testing::scalar(*db, "SELECT count(*) FROM t"), 0);
  {
    auto tx = Transaction::begin(*db);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(db->exec("INSERT INTO t VALUES (1)"));
    ASSERT_TRUE(tx->commit());
  }
  EXPECT_EQ(testing::scalar(*db, "SELECT count(*) FROM t"), 1);
}

// Statements prepared on the connection and not yet finalized.
int open_statements(const Db& db) {
  int n = 0;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db.handle(), nullptr); s != nullptr;
       s = sqlite3_next_stmt(db.handle(), s)) {
    ++n;
  }
  return n;
}

TEST(StoreDb, CachedStatementIsKeptAndHandedOutClean) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec("CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (1), (2), (3);"));
  constexpr const char* kSql = "SELECT v FROM t WHERE v >= ? ORDER BY v";
  {
    auto st = db->cached(kSql);
    ASSERT_TRUE(st) << st.error().what();
    st->bind_all(2);
    auto row = st->step();
    ASSERT_TRUE(row) << row.error().what();
    ASSERT_TRUE(*row);
    EXPECT_EQ(st->column_int64(0), 2);  // dropped half-read, binds set
  }
  EXPECT_EQ(open_statements(*db), 1);  // kept, not finalized
  auto again = db->cached(kSql);
  ASSERT_TRUE(again);
  EXPECT_EQ(open_statements(*db), 1);  // the same one, not a second
  // Reset and cleared: an unbound parameter is NULL, and `v >= NULL` matches nothing.
  auto first = again->step();
  ASSERT_TRUE(first) << first.error().what();
  EXPECT_FALSE(*first);
  again->reset();
  again->bind_all(1);
  ASSERT_TRUE(again->step().value());
  EXPECT_EQ(again->column_int64(0), 1);  // from the first row, not where the last user stopped
}

TEST(StoreDb, CachedStatementInUseIsNotSharedWithASecondUser) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec("CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (1), (2);"));
  constexpr const char* kSql = "SELECT v FROM t ORDER BY v";
  auto outer = db->cached(kSql);
  ASSERT_TRUE(outer);
  ASSERT_TRUE(outer->step().value());
  {
    auto inner = db->cached(kSql);
    ASSERT_TRUE(inner);
    ASSERT_TRUE(inner->step().value());
    ASSERT_TRUE(inner->step().value());
    EXPECT_EQ(inner->column_int64(0), 2);
  }
  EXPECT_EQ(outer->column_int64(0), 1);  // the inner walk did not move the outer one
  ASSERT_TRUE(outer->step().value());
  EXPECT_EQ(outer->column_int64(0), 2);
  EXPECT_EQ(open_statements(*db), 1);  // the second user's own statement was finalized
}

TEST(StoreDb, CachedStatementOfBadSqlIsAnErrorAndNotKept) {
  TempDir dir;
  auto db = Db::open(dir.file("a.db"));
  ASSERT_TRUE(db);
  auto st = db->cached("SELECT nope FROM missing");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().what().find("missing"), std::string::npos) << st.error().what();
  EXPECT_EQ(open_statements(*db), 0);
}

TEST(StoreDb, MissingDirectoryErrorNamesFile) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/cardiac.db");
  auto db = Db::open(path);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().what().find(path), std::string::npos) << db.error().what();
}

TEST(StoreDb, ParentIsAFileErrorNamesFile) {
  TempDir dir;
  std::ofstream(dir.file("plain")) << "x";
  const std::string path = dir.file("plain/cardiac.db");
  auto db = Db::open(path);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().what().find(path), std::string::npos) << db.error().what();
}

TEST(StoreDb, CorruptFileErrorNamesFile) {
  TempDir dir;
  const std::string path = dir.file("corrupt.db");
  {
    std::ofstream out(path, std::ios::binary);
    std::mt19937 rng(42);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>(rng() & 0xff));
  }
  auto db = Db::open(path);
  ASSERT_FALSE(db);
  const std::string what = db.error().what();
  EXPECT_EQ(db.error().code, ErrorCode::kParse);
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("not a database"), std::string::npos) << what;
}

}  // namespace
}  // namespace cardiac::store
