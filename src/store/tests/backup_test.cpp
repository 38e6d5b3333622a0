// SPDX-License-Identifier: Apache-2.0
// Backup and restore on real stores: a backup taken while a writer thread commits samples
// holds every sample committed before it started, sealed or in the tail; restore puts it back,
// keeps the store it replaces and refuses bad files and a store an agent holds.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include "store/backup.h"
#include "store/lock.h"
#include "store/schema.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

using testing::TempDir;

constexpr TimeNs kBackupT0 = 1'764'000'000 * kNsPerSec;

// The instants (seconds after kT0) of gpu_temperature samples on GPU 0.
std::set<std::int64_t> seconds(const Db& db) {
  std::set<std::int64_t> out;
  for (const auto& r : testing::raw_rows(db)) {
    if (r.metric == "gpu_temperature" && r.gpu == 0) out.insert((r.time - kBackupT0) / kNsPerSec);
  }
  return out;
}

// A store with `n` samples (seconds 0..n-1), flushed one at a time.
void write_samples(Db& db, int from, int n) {
  SampleWriter w(db);
  for (int i = from; i < from + n; ++i) {
    ASSERT_TRUE(w.append("gpu_temperature", 0U, kBackupT0 + i * kNsPerSec, i));
    ASSERT_TRUE(w.flush());
  }
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

mode_t backup_mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(StoreBackup, WhileAWriterCommitsHoldsEverySampleCommittedBefore) {
  TempDir dir;
  const std::string db_path = dir.file("cardiac.db");
  { Db init = testing::open_test_store(dir); }
  std::atomic<int> committed{-1};
  std::atomic<bool> stop{false};
  constexpr int kMax = 6000;  // ten seals' worth of one series, if the backup is slow
  std::thread writer([&] {
    auto db = open_store(db_path);
    ASSERT_TRUE(db) << db.error().what();
    SampleWriter w(*db);
    for (int i = 0; i < kMax && !stop.load(); ++i) {
      ASSERT_TRUE(w.append("gpu_temperature", 0U, kBackupT0 + i * kNsPerSec, i));
      ASSERT_TRUE(w.flush());
      committed.store(i);
    }
  });
  // Past the first seal (600 points) so the copy has both chunks and a tail.
  while (committed.load() < 1500 && committed.load() < kMax - 1) std::this_thread::yield();
  const int before = committed.load();
  auto b = backup_store(db_path, dir.file("backup.db"));
  const int writer_was_at = committed.load();
  stop = true;
  writer.join();
  ASSERT_TRUE(b) << b.error().what();
  EXPECT_EQ(backup_mode_of(dir.file("backup.db")), 0600U);
  EXPECT_GT(b->bytes, 0);
  EXPECT_TRUE(std::find(b->side_files.begin(), b->side_files.end(), "-tail0") !=
              b->side_files.end());
  ASSERT_TRUE(check_backup(dir.file("backup.db")));  // integrity_check among others

  TempDir other;
  auto r = restore_store(dir.file("backup.db"), other.file("cardiac.db"), false);
  ASSERT_TRUE(r) << r.error().what();
  auto restored = open_store(other.file("cardiac.db"));
  ASSERT_TRUE(restored) << restored.error().what();
  EXPECT_EQ(testing::scalar(*restored, "SELECT count(*) FROM sample_seals") > 0, true);
  const auto got = seconds(*restored);
  for (int i = 0; i <= before; ++i) {
    ASSERT_TRUE(got.contains(i)) << "sample " << i << " committed before the backup is missing";
  }
  EXPECT_LE(static_cast<int>(got.size()), writer_was_at + 1);  // nothing invented
}

TEST(StoreBackup, RestoreRoundTripKeepsTheReplacedStore) {
  TempDir dir;
  const std::string db_path = dir.file("cardiac.db");
  {
    Db db = testing::open_test_store(dir);
    write_samples(db, 0, 700);
  }
  ASSERT_TRUE(backup_store(db_path, dir.file("b.db")));
  {
    Db db = testing::open_test_store(dir);
    write_samples(db, 700, 50);
    EXPECT_EQ(seconds(db).size(), 750U);
  }
  auto r = restore_store(dir.file("b.db"), db_path, false);
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ(r->kept, db_path + ".before-restore");
  EXPECT_EQ(r->schema_version, latest_schema_version());
  {
    auto db = open_store(db_path);
    ASSERT_TRUE(db) << db.error().what();
    EXPECT_EQ(seconds(*db).size(), 700U);
    EXPECT_EQ(testing::scalar(*db,
                              "SELECT count(*) FROM sqlite_schema WHERE name = "
                              "'cardiac_backup_files'"),
              0);
  }
  EXPECT_EQ(backup_mode_of(db_path), 0600U);
  {
    auto kept = open_store(db_path + ".before-restore");
    ASSERT_TRUE(kept) << kept.error().what();
    EXPECT_EQ(seconds(*kept).size(), 750U);  // its tail moved with it
  }
  // A second restore would replace the kept store: only with force.
  auto again = restore_store(dir.file("b.db"), db_path, false);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().what().find(".before-restore is there"), std::string::npos)
      << again.error().what();
  EXPECT_TRUE(restore_store(dir.file("b.db"), db_path, true));
}

TEST(StoreBackup, RestoreRefusesBadFilesAndKeepsTheStore) {
  TempDir dir;
  const std::string db_path = dir.file("cardiac.db");
  {
    Db db = testing::open_test_store(dir);
    write_samples(db, 0, 700);
  }
  ASSERT_TRUE(backup_store(db_path, dir.file("good.db")));
  std::string corrupt = slurp(dir.file("good.db"));
  ASSERT_GT(corrupt.size(), 5U * 4096U);
  for (std::size_t i = 2 * 4096; i < 4 * 4096; ++i) corrupt[i] = static_cast<char>(i * 7);
  dir.write("corrupt.db", corrupt);
  dir.write("text.db", "this is not a database, only some text that is long enough to read\n");
  {
    auto foreign = Db::open(dir.file("foreign.db"));
    ASSERT_TRUE(foreign);
    ASSERT_TRUE(foreign->exec("CREATE TABLE t (x); INSERT INTO t VALUES (1);"));
  }
  for (const char* bad : {"corrupt.db", "text.db", "foreign.db", "missing.db"}) {
    auto r = restore_store(dir.file(bad), db_path, false);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().what().find(dir.file(bad)), std::string::npos) << r.error().what();
    EXPECT_FALSE(std::filesystem::exists(db_path + ".before-restore")) << bad;
    EXPECT_FALSE(std::filesystem::exists(db_path + ".restore-tmp")) << bad;
    auto db = open_store(db_path);
    ASSERT_TRUE(db);
    EXPECT_EQ(seconds(*db).size(), 700U) << bad;
  }
}

TEST(StoreBackup, RestoreRefusedWhileAnAgentHoldsTheStore) {
  TempDir dir;
  const std::string db_path = dir.file("cardiac.db");
  {
    Db db = testing::open_test_store(dir);
    write_samples(db, 0, 10);
  }
  ASSERT_TRUE(backup_store(db_path, dir.file("b.db")));
  auto agent = try_lock_store(db_path, false);  // what the agent takes at start
  ASSERT_TRUE(agent && agent->has_value());
  auto r = restore_store(dir.file("b.db"), db_path, false);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("an agent is running"), std::string::npos) << r.error().what();
  EXPECT_FALSE(std::filesystem::exists(db_path + ".before-restore"));
  agent->reset();
  EXPECT_TRUE(restore_store(dir.file("b.db"), db_path, false));
}

TEST(StoreBackup, BackupOfAMissingStoreNamesIt) {
  TempDir dir;
  auto b = backup_store(dir.file("nope.db"), dir.file("b.db"));
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().what().find(dir.file("nope.db")), std::string::npos) << b.error().what();
  EXPECT_FALSE(std::filesystem::exists(dir.file("b.db")));
}

}  // namespace
}  // namespace cardiac::store
