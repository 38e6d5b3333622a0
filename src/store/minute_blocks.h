// SPDX-License-Identifier: Apache-2.0
// Minute roll-ups stored as one block per series and hour, appended in time order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "store/chunk.h"
#include "store/db.h"

namespace cardiac::store {

// One minute of one series: min/avg/max/count of its raw samples.
struct MinuteBucket {
  TimeNs bucket = 0;  // time - time % kMinuteNs, as SQL's % rounds
  double min = 0;
  double avg = 0;
  double max = 0;
  std::int64_t count = 0;
};

// The hour a bucket's block belongs to (bucket - bucket % kHourNs, as SQL's % rounds).
[[nodiscard]] TimeNs block_hour(TimeNs bucket);

// A block: its buckets ascending, each a minute of `hour`; doubles kept bit for bit, each of
// min, avg and max XORed with the bucket before in a bit stream (a minute like the one before
// costs about 5 bits). Blocks of the first layout (a double per value) decode too.
[[nodiscard]] std::string encode_minute_block(TimeNs hour, std::span<const MinuteBucket> buckets);
// A parse error when truncated or corrupt; never reads past `data`.
[[nodiscard]] Result<std::vector<MinuteBucket>> decode_minute_block(std::string_view data,
                                                                    TimeNs hour);

// The minute buckets of `key` in [from, to), ascending: rows of the older `rollup_1m` table,
// then blocks (one seek per hour of the range).
[[nodiscard]] Result<std::vector<MinuteBucket>> read_minute_buckets(const Db& db, SeriesKey key,
                                                                    TimeNs from, TimeNs to);

// Writes `fresh` (buckets of one series in one block hour, ascending) over what the block held,
// bucket by bucket as INSERT OR REPLACE over rows did; the block is not written when nothing in
// it changes. Rows of the older table in the fresh buckets' span are deleted. The caller holds
// the write transaction.
[[nodiscard]] Status merge_minute_block(Db& db, SeriesKey key, TimeNs hour,
                                        std::span<const MinuteBucket> fresh);

// Deletes every minute bucket before `before`: whole blocks, and the older buckets of the blocks
// that straddle it. The caller holds the write transaction. Returns the buckets deleted.
[[nodiscard]] Result<std::int64_t> prune_minute_blocks_locked(Db& db, TimeNs before);

}  // namespace cardiac::store
