// SPDX-License-Identifier: Apache-2.0
// Tests for the tail files: a flush writes no database page, a torn record is cut off, and a
// store whose tail was still a table keeps it.
#include "store/tail_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/chunk.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "store/tests/support.h"
#include "store/writer.h"

namespace cardiac::store {
namespace {

using testing::scalar;
using testing::tail_records;
using testing::TempDir;

constexpr TimeNs kTailT0 = 1'700'002'800LL * kNsPerSec;

std::uintmax_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

Status flush_seconds(SampleWriter& w, int from, int to) {
  for (int s = from; s < to; ++s) {
    CARDIAC_TRY(w.append("gpu_temperature", 0u, kTailT0 + s * kNsPerSec, 50 + s % 7));
    CARDIAC_TRY(w.append("host_load1", std::nullopt, kTailT0 + s * kNsPerSec, 0.25 * (s % 5)));
  }
  return w.flush();
}

TEST(StoreTailLog, FlushesWriteTheTailFileAndNoDatabasePage) {
  TempDir dir;
  const std::string path = dir.file("cardiac.db");
  Db db = testing::open_test_store(dir);
  SampleWriter w(db);
  ASSERT_TRUE(flush_seconds(w, 0, 5));  // the first flush notes the sealed segment
  const auto wal = size_or_zero(path + "-wal");
  const auto main = size_or_zero(path);
  for (int i = 1; i < 20; ++i) ASSERT_TRUE(flush_seconds(w, i * 5, i * 5 + 5));
  EXPECT_EQ(size_or_zero(path + "-wal"), wal);
  EXPECT_EQ(size_or_zero(path), main);
  EXPECT_GT(size_or_zero(tail_log_path(path, 1)), 0u);
  EXPECT_EQ(tail_records(db), 20);
  // What a kill -9 leaves: another connection reads every flush.
  auto reader = open_store(path);
  ASSERT_TRUE(reader);
  EXPECT_EQ(count_raw_samples(*reader).value(), 200);
}

TEST(StoreTailLog, TornLastRecordIsCutOffAndTheRestIsSealed) {
  TempDir dir;
  const std::string path = dir.file("cardiac.db");
  Db db = testing::open_test_store(dir);
  {
    SampleWriter w(db);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(flush_seconds(w, i * 5, i * 5 + 5));
  }
  const std::string file = tail_log_path(path, 1);
  std::filesystem::resize_file(file, size_or_zero(file) - 3);  // a power loss mid-write
  EXPECT_EQ(tail_records(db), 2);
  EXPECT_EQ(count_raw_samples(db).value(), 20);

  SampleWriter next(db);
  ASSERT_TRUE(flush_seconds(next, 15, 20));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_seals"), 1);
  EXPECT_EQ(scalar(db, "SELECT sum(count) FROM sample_chunks"), 20);
  EXPECT_EQ(tail_records(db), 1);  // the new segment's, in the other file
  EXPECT_EQ(scalar(db, "SELECT sealed_segment FROM tail_log"), 1);
  auto log = live_tail_records(db);
  ASSERT_TRUE(log);
  EXPECT_EQ(log->records.front().segment, 2);
  EXPECT_EQ(count_raw_samples(db).value(), 30);
}

TEST(StoreTailLog, RecordsOfAnotherSegmentOrOutOfOrderEndTheFile) {
  TempDir dir;
  const std::string path = dir.file("cardiac.db");
  TailRecord r{3, 0, kTailT0, kTailT0, 0, "x"};
  ASSERT_TRUE(append_tail_record(path, r));
  r.seq = 1;
  ASSERT_TRUE(append_tail_record(path, r));
  r.seq = 3;  // a gap
  ASSERT_TRUE(append_tail_record(path, r));
  auto got = read_tail_log(path, 0);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->records.size(), 2u);
  auto none = read_tail_log(path, 3);  // sealed: stale
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->records.empty());
  // A new segment of the same parity starts the file afresh.
  ASSERT_TRUE(append_tail_record(path, TailRecord{5, 0, kTailT0, kTailT0, 0, "y"}));
  got = read_tail_log(path, 3);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->records.size(), 1u);
  EXPECT_EQ(got->records.front().segment, 5);
  EXPECT_EQ(got->records.front().data, "y");
}

// A file holding the other parity's segment (copied over, or damaged with a valid CRC) is not
// read: its records would repeat the other file's. Found by fuzz/fuzz_tail_log.cpp.
TEST(StoreTailLog, ASegmentInTheOtherParitysFileIsNotRead) {
  TempDir dir;
  const std::string path = dir.file("cardiac.db");
  ASSERT_TRUE(append_tail_record(path, TailRecord{3, 0, kTailT0, kTailT0, 0, "x"}));
  std::filesystem::copy_file(tail_log_path(path, 3), tail_log_path(path, 4));
  auto got = read_tail_log(path, -1);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->records.size(), 1u);
  EXPECT_EQ(got->records.front().segment, 3);
}

TEST(StoreTailLog, TailRowsOfTheTableMigrateAndAreSealedByTheNextWriter) {
  TempDir dir;
  const std::string path = dir.file("cardiac.db");
  {
    // A store as version 6 left it: two tail rows of segment 4 in `sample_tail`.
    Db db = testing::open_test_store(dir);
    ASSERT_TRUE(db.exec(testing::kUndoMigration8));
    ASSERT_TRUE(
        db.exec("DROP TABLE tail_log; DROP TABLE rollup_1m_blocks; "
                "DELETE FROM schema_version WHERE version >= 7"));
    ASSERT_TRUE(db.exec("INSERT INTO metrics(id, name) VALUES (1, 'gpu_temperature')"));
    TailChain chain;
    for (int row = 0; row < 2; ++row) {
      std::vector<SeriesPoints> batch{{SeriesKey{1, 0}, {}}};
      for (int s = row * 5; s < row * 5 + 5; ++s) {
        batch[0].points.push_back({kTailT0 + s * kNsPerSec, 40.5 + s});
      }
      auto data = encode_tail_row(batch, chain);
      ASSERT_TRUE(data);
      auto st = db.prepare(
          "INSERT INTO sample_tail(segment, seq, start_ns, end_ns, count, data) "
          "VALUES (4, ?1, ?2, ?3, 5, ?4)");
      ASSERT_TRUE(st);
      st->bind_all(row, kTailT0 + row * 5 * kNsPerSec, kTailT0 + (row * 5 + 4) * kNsPerSec)
          .bind_blob(4, *data);
      ASSERT_TRUE(st->run());
    }
  }
  Db db = testing::open_test_store(dir);
  EXPECT_EQ(schema_version(db).value(), latest_schema_version());
  EXPECT_EQ(scalar(db, "SELECT sealed_segment FROM tail_log"), 4);
  EXPECT_EQ(count_raw_samples(db).value(), 10);
  auto before = read_series(db, {1, 0}, kTailT0, kTailT0 + 3600 * kNsPerSec);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->size(), 10u);

  SampleWriter w(db);
  ASSERT_TRUE(w.append("gpu_temperature", 0u, kTailT0 + 10 * kNsPerSec, 50.5));
  ASSERT_TRUE(w.flush());
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sample_tail"), 0);
  EXPECT_EQ(scalar(db, "SELECT sum(count) FROM sample_chunks"), 10);
  auto log = live_tail_records(db);
  ASSERT_TRUE(log);
  ASSERT_EQ(log->records.size(), 1u);
  EXPECT_EQ(log->records.front().segment, 5);
  auto after = read_series(db, {1, 0}, kTailT0, kTailT0 + 3600 * kNsPerSec);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->size(), 11u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ((*after)[i].time, (*before)[i].time);
    EXPECT_EQ((*after)[i].value, (*before)[i].value);
  }
}

}  // namespace
}  // namespace cardiac::store
