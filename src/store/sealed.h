// SPDX-License-Identifier: Apache-2.0
// Where raw samples live: sealed chunks, the writer's tail, and rows of the older `samples`
// table; reading them back per series, sealing, counting and pruning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/chunk.h"
#include "store/db.h"
#include "store/schema.h"
#include "store/tail_log.h"

namespace cardiac::store {

// A writer seals its tail once one series of its open segment would reach this many samples:
// 10 minutes at the default 1 s interval. Large enough that a chunk's first sample (16 bytes
// in full) and its row overhead are small per sample, small enough that a query decodes at
// most this many extra samples per series from the tail.
inline constexpr std::size_t kSealPoints = 600;

// Rows of the older `samples` table moved into chunks per call of seal_legacy_samples() by the
// writer, after each seal of its own: bounded so one seal never stalls the sampler for long.
inline constexpr std::int64_t kLegacyRowsPerSeal = 200'000;

using SeriesMap = std::map<SeriesKey, std::vector<Point>>;

// The points of `key` in [from, to) from every place raw samples live, ascending in time
// (stable: equal times keep the order legacy rows, chunks, tail). Decodes only the chunks whose
// seal and own range overlap the range, and the tail. A parse error names a damaged blob.
// `tail`, when given and holding the key's GPU: the tail decoded once for all the reads of one
// request (a chart reads nine series of one GPU; each read decoded the whole tail for its one).
struct TailCache {
  std::int64_t gpu = kHostGpu;  // whose series it keeps: this GPU's, or the host's
  bool loaded = false;
  SeriesMap series;
};
[[nodiscard]] Result<std::vector<Point>> read_series(const Db& db, SeriesKey key, TimeNs from,
                                                     TimeNs to, TailCache* tail = nullptr);

// Every series' points in [from, to), each ascending in time as read_series() gives them.
[[nodiscard]] Result<SeriesMap> read_all_series(const Db& db, TimeNs from, TimeNs to);

// The same points as read_all_series(), handed to `each` one series at a time in key order and
// never held together: memory is one series' points plus the tail's part of the range (an
// hour of 357 series is about 20 MB as points). Each series' chunks are an index seek per seal.
// Stops at the first error `each` returns.
using SeriesVisitor = std::function<Status(const SeriesKey&, const std::vector<Point>&)>;
[[nodiscard]] Status for_each_series(const Db& db, TimeNs from, TimeNs to,
                                     const SeriesVisitor& each);

// Whether any raw sample of `key` is stored, at any time.
[[nodiscard]] Result<bool> has_raw_series(const Db& db, SeriesKey key);

// The GPUs (never the host) with a raw sample at or after `since`, ascending. Reads the chunk
// rows of the seals since then (not their samples) and the tail.
[[nodiscard]] Result<std::vector<std::int64_t>> gpus_with_raw_samples(const Db& db, TimeNs since);

// The records of the tail files not sealed yet, by segment and seq.
[[nodiscard]] Result<TailLog> live_tail_records(const Db& db);

// Raw samples stored: legacy rows, sealed chunks and tail together.
[[nodiscard]] Result<std::int64_t> count_raw_samples(const Db& db);

// Writes every tail row (of the older `sample_tail` table and of the tail files) plus `extra` as
// one seal (a time column and one chunk per series), deletes the table's rows and marks the
// files' segments sealed. The caller holds the write transaction, so the move is atomic.
// Returns the samples sealed (0 and no seal when there were none).
[[nodiscard]] Result<std::int64_t> seal_tail_locked(Db& db, const SeriesMap& extra = {});

// seal_tail_locked() in its own transaction.
[[nodiscard]] Result<std::int64_t> seal_tail(Db& db);

// Moves the oldest `max_rows` rows (by rowid) of the older `samples` table into one seal, in one
// transaction. Returns the rows moved; 0 once the table is empty.
[[nodiscard]] Result<std::int64_t> seal_legacy_samples(Db& db, std::int64_t max_rows);

// Deletes whole seals whose last sample is before `before`, with their chunks. The caller holds
// the write transaction. Returns the samples deleted.
[[nodiscard]] Result<std::int64_t> prune_seals_locked(Db& db, TimeNs before);

}  // namespace cardiac::store
