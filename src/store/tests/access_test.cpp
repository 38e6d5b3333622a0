// SPDX-License-Identifier: Apache-2.0
// State directory and store file modes, the read-only way in, and plain-word store errors.
#include "store/access.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/events.h"
#include "store/schema.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

using testing::TempDir;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::uintmax_t size_of(const std::string& path) {
  return std::filesystem::file_size(path);
}

TEST(StoreAccess, ModesForOwnerGroupAndReachableSocket) {
  StoreAccess own = store_access(std::nullopt, false);
  EXPECT_EQ(own.dir_mode, 0700u);
  EXPECT_EQ(own.file_mode, 0600u);
  StoreAccess grp = store_access(gid_t{42}, false);
  EXPECT_EQ(grp.dir_mode, 0750u);
  EXPECT_EQ(grp.file_mode, 0640u);
  EXPECT_EQ(store_access(std::nullopt, true).dir_mode, 0701u);
  EXPECT_EQ(store_access(gid_t{42}, true).dir_mode, 0751u);
}

TEST(StoreAccess, NewStateDirectoryAndStoreAreOwnerOnly) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  auto changes = secure_state_dir(dir, store_access(std::nullopt, false));
  ASSERT_TRUE(changes) << changes.error().what();
  EXPECT_TRUE(changes->empty());
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(dir + "/cardiac.db"), 0600u);
  // SQLite gives the -wal and -shm the database's mode.
  ::umask(022);
  auto db = open_store(dir + "/cardiac.db");
  ASSERT_TRUE(db) << db.error().what();
  EXPECT_EQ(mode_of(dir + "/cardiac.db-wal"), 0600u);
  EXPECT_EQ(mode_of(dir + "/cardiac.db-shm"), 0600u);
  // The writer gives its tail files the database's mode too, whatever the umask.
  ::chmod((dir + "/cardiac.db").c_str(), 0640);
  SampleWriter w(*db);
  ASSERT_TRUE(w.append("gpu_temperature", 0u, 1'700'000'000LL * kNsPerSec, 40));
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(mode_of(dir + "/cardiac.db-tail1"), 0640u);
  // And the next start tightens them with the rest.
  auto changes2 = secure_state_dir(dir, store_access(std::nullopt, false));
  ASSERT_TRUE(changes2) << changes2.error().what();
  EXPECT_EQ(mode_of(dir + "/cardiac.db-tail1"), 0600u);
}

TEST(StoreAccess, TooOpenStateIsTightenedAndReported) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  std::filesystem::create_directory(dir);
  ::chmod(dir.c_str(), 0755);
  {
    auto db = open_store(dir + "/cardiac.db");  // as an older cardiac left it: 0644
    ASSERT_TRUE(db);
    ::chmod((dir + "/cardiac.db").c_str(), 0644);
    ::chmod((dir + "/cardiac.db-wal").c_str(), 0644);
    auto changes = secure_state_dir(dir, store_access(std::nullopt, false));
    ASSERT_TRUE(changes) << changes.error().what();
    EXPECT_GE(changes->size(), 3u);  // the directory, the database, the -wal (and -shm)
    ASSERT_FALSE(changes->empty());
    EXPECT_NE(changes->front().find("0755 → 0700"), std::string::npos) << changes->front();
  }
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(dir + "/cardiac.db"), 0600u);
  // A second start has nothing left to change.
  auto again = secure_state_dir(dir, store_access(std::nullopt, false));
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
}

TEST(StoreAccess, GroupReadableWhenConfigured) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  const gid_t gid = getegid();  // a group we may always give
  auto changes = secure_state_dir(dir, store_access(gid, false));
  ASSERT_TRUE(changes) << changes.error().what();
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/cardiac.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, gid);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(mode_of(dir), 0750u);
}

TEST(StoreAccess, UnknownGroupIsAClearError) {
  auto g = group_id("no-such-group-cardiac-test");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(g.error().what().find("no-such-group-cardiac-test"), std::string::npos);
}

TEST(StoreAccess, ASymlinkInPlaceOfTheStoreIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("state");
  std::filesystem::create_directory(dir);
  std::ofstream(tmp.file("elsewhere")) << "x";
  ::chmod(tmp.file("elsewhere").c_str(), 0644);
  std::filesystem::create_symlink(tmp.file("elsewhere"), dir + "/cardiac.db");
  auto changes = secure_state_dir(dir, store_access(std::nullopt, false));
  ASSERT_FALSE(changes);
  EXPECT_NE(changes.error().what().find("symbolic link"), std::string::npos);
  EXPECT_EQ(mode_of(tmp.file("elsewhere")), 0644u);
}

TEST(StoreReadOnly, ReadsWhatTheAgentWroteAndWritesNothing) {
  TempDir tmp;
  const std::string path = tmp.file("cardiac.db");
  {
    auto db = open_store(path);
    ASSERT_TRUE(db);
    Event e;
    e.time_ns = 1'000;
    e.kind = "xid";
    e.message = "Xid 79";
    e.dedup_key = "k";
    ASSERT_TRUE(insert_event(*db, e));
  }
  auto ro = open_store_read_only(path);
  ASSERT_TRUE(ro) << ro.error().what();
  auto evs = events_since(*ro, 0, 10);
  ASSERT_TRUE(evs) << evs.error().what();
  EXPECT_EQ(evs->size(), 1u);
  auto write = ro->exec("DELETE FROM events");
  EXPECT_FALSE(write);
}

TEST(StoreReadOnly, AnEmptyFileGetsNoSchema) {
  TempDir tmp;
  const std::string path = tmp.file("cardiac.db");
  std::ofstream(path).flush();
  auto ro = open_store_read_only(path);
  ASSERT_FALSE(ro);
  EXPECT_NE(ro.error().what().find(path), std::string::npos);
  EXPECT_NE(ro.error().what().find("no tables yet"), std::string::npos) << ro.error().what();
  EXPECT_EQ(size_of(path), 0u);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(StoreReadOnly, MissingStoreIsNotCreated) {
  TempDir tmp;
  const std::string path = tmp.file("cardiac.db");
  auto ro = open_store_read_only(path);
  ASSERT_FALSE(ro);
  EXPECT_EQ(ro.error().code, ErrorCode::kNotFound);
  EXPECT_NE(ro.error().what().find(path), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(StoreReadOnly, NotADatabaseIsSaidInPlainWords) {
  TempDir tmp;
  const std::string path = tmp.file("cardiac.db");
  std::ofstream(path) << std::string(8192, 'x');
  auto ro = open_store_read_only(path);
  ASSERT_FALSE(ro);
  const std::string what = ro.error().what();
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("not an SQLite database"), std::string::npos) << what;
  EXPECT_NE(what.find("mv " + path + " " + path + ".broken"), std::string::npos) << what;
  EXPECT_EQ(what.find("file is not a database"), std::string::npos) << what;
}

TEST(StoreReadOnly, AStoreFromANewerCardiacIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("cardiac.db");
  {
    auto db = open_store(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->exec("INSERT INTO schema_version(version) VALUES (999)"));
  }
  auto ro = open_store_read_only(path);
  ASSERT_FALSE(ro);
  EXPECT_NE(ro.error().what().find("newer"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::store
