// SPDX-License-Identifier: Apache-2.0
// Tests for schema migrations.
#include "store/schema.h"

#include <gtest/gtest.h>

#include "store/tests/support.h"

namespace cardiac::store {
namespace {

using testing::scalar;
using testing::TempDir;

TEST(StoreSchema, FreshDatabaseGetsLatestVersionAndTables) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  EXPECT_EQ(schema_version(db).value(), latest_schema_version());
  for (const char* table :
       {"samples", "metrics", "rollup_1m", "rollup_1h", "events", "alerts", "alert_history",
        "schema_version", "sample_seals", "sample_chunks", "sample_tail"}) {
    EXPECT_EQ(
        scalar(db, std::string("SELECT count(*) FROM sqlite_schema WHERE name = '") + table + "'"),
        1)
        << table;
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'samples_by_series'"), 1);
}

TEST(StoreSchema, MigrateIsIdempotent) {
  TempDir dir;
  Db db = testing::open_test_store(dir);
  ASSERT_TRUE(migrate(db));
  ASSERT_TRUE(migrate(db));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM schema_version"), latest_schema_version());
  auto again = open_store(dir.file("cardiac.db"));
  ASSERT_TRUE(again) << again.error().what();
}

TEST(StoreSchema, NewerDatabaseIsRefused) {
  TempDir dir;
  {
    Db db = testing::open_test_store(dir);
    ASSERT_TRUE(db.exec("INSERT INTO schema_version(version) VALUES (999)"));
  }
  auto db = open_store(dir.file("cardiac.db"));
  ASSERT_FALSE(db);
  const std::string what = db.error().what();
  EXPECT_EQ(db.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(what.find("999"), std::string::npos) << what;
  EXPECT_NE(what.find("newer"), std::string::npos) << what;
  EXPECT_NE(what.find(dir.file("cardiac.db")), std::string::npos) << what;
}

}  // namespace
}  // namespace cardiac::store
