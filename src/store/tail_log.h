// SPDX-License-Identifier: Apache-2.0
// The writer's unsealed tail as two append-only files beside the database, one record a flush.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/db.h"

namespace cardiac::store {

// One flush of a writer's segment: the bit-packed batch of encode_tail_row() and its extent.
// `data` is a view: of the caller's bytes when appending, of TailLog::files when read back.
struct TailRecord {
  std::int64_t segment = 0;
  std::int64_t seq = 0;  // 0, 1, 2... within the segment
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::int64_t count = 0;
  std::string_view data;
};

// The records read back from both files, viewing the files' bytes as read in one block each: a
// seal reads the tail seven times, and a copy of each record (a few hundred bytes, 600 of them)
// scattered that many small blocks through the heap each time.
struct TailLog {
  std::vector<std::string> files;
  std::vector<TailRecord> records;

  TailLog() = default;
  TailLog(TailLog&&) = default;
  TailLog& operator=(TailLog&&) = default;
  // A copy's records would view the other log's files.
  TailLog(const TailLog&) = delete;
  TailLog& operator=(const TailLog&) = delete;
  ~TailLog() = default;
};

// The file of `segment`: "<db>-tail0" for even segments, "<db>-tail1" for odd ones. A segment
// starts by truncating its file, which then held the segment two before, sealed long since.
[[nodiscard]] std::string tail_log_path(std::string_view db_path, std::int64_t segment);

// The last segment whose records are sealed into chunks (the `tail_log` row of migration 7):
// records of this segment and earlier ones are stale wherever they still lie.
[[nodiscard]] Result<std::int64_t> sealed_tail_segment(const Db& db);
// Raises it to `segment` (never lowers it). In the caller's write transaction.
[[nodiscard]] Status set_sealed_tail_segment(Db& db, std::int64_t segment);

// The records of both files whose segment is after `sealed`, by segment then seq. Each file is
// read up to its first record that is torn (a power loss mid-write), fails its CRC, belongs to
// another segment than the file's first one or breaks the seq order: what follows it cannot be
// decoded without it. Absent files are empty.
[[nodiscard]] Result<TailLog> read_tail_log(std::string_view db_path, std::int64_t sealed);

// Appends one record to its segment's file with one write(2) (seq 0 truncates the file first),
// created with `mode`. Once this returns, a kill -9 keeps the record (it is in the page cache);
// a failed write is cut off again so that the file stays readable.
[[nodiscard]] Status append_tail_record(std::string_view db_path, const TailRecord& record,
                                        unsigned mode = 0600);

// fdatasync of the database's -wal: before a segment's file is truncated, the seal holding the
// records it had must be on disk too, not only in the page cache (synchronous=NORMAL syncs the
// WAL only at checkpoints). Nothing to do without a -wal.
[[nodiscard]] Status sync_wal(std::string_view db_path);

}  // namespace cardiac::store
