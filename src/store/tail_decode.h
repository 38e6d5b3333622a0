// SPDX-License-Identifier: Apache-2.0
// Decoding the writer's tail (the older `sample_tail` rows and the tail files) for the code that
// reads, seals and rolls up raw samples, a group of series at a time. Internal to the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "core/result.h"
#include "store/chunk.h"
#include "store/db.h"
#include "store/point_pool.h"
#include "store/sealed.h"
#include "store/tail_log.h"

namespace cardiac::store {

using TailVisitor = std::function<void(const std::vector<SeriesPoints>&)>;

// One row's series at a time, their vectors reused from row to row (and, in a seal, from one
// decoding of the tail to the next).
struct TailScratch {
  std::vector<SeriesPoints> series;
  std::vector<TimeNs> times;
};

// Decodes the tail: the rows of the older `sample_tail` table in id order, then the records of
// `log` (the tail files after the sealed segment), each segment's chain on its own; `keep` gets
// each row's or record's series.
[[nodiscard]] Status decode_tail(const Db& db, const TailLog& log, TailScratch& scratch,
                                 const TailVisitor& keep);
// The same over the tail files as they are now, read for this call.
[[nodiscard]] Status decode_tail(const Db& db, const TailVisitor& keep);

// A seal or a roll-up decodes the tail once per group of series whose tail points number up to
// this many, holding one group's points (64 series of a seal's 600: 0.6 MB in one block, see
// PointPool) rather than every series' (3.4 MB for 8 GPUs). Bounded by points, not series: a
// roll-up usually takes the last minutes of an hour from the tail, a few groups' worth at most.
inline constexpr std::size_t kGroupPoints = 64 * kSealPoints;

// The end of the group that starts at `first` of `n` series: series join it while its points
// stay within kGroupPoints (`points(i)`: series i's); at least one series.
template <class PointsOf>
std::size_t group_end(std::size_t first, std::size_t n, const PointsOf& points) {
  std::size_t end = first;
  std::size_t held = 0;
  while (end < n && (end == first || held + points(end) <= kGroupPoints)) {
    held += points(end);
    ++end;
  }
  return end;
}

// Adds to `counts` how many of each series' tail points lie in [from, to) (a series with none
// gets no entry).
[[nodiscard]] Status count_tail(const Db& db, const TailLog& log, TailScratch& scratch, TimeNs from,
                                TimeNs to, std::map<SeriesKey, std::size_t>& counts);

// Adds the tail's points that `keep` takes, of the series of `pool` (a key of another group is
// left out); they must fill it exactly, as the count that sized it said.
template <class Keep>
Status fill_from_tail(const Db& db, const TailLog& log, TailScratch& scratch, PointPool& pool,
                      const Keep& keep) {
  CARDIAC_TRY(decode_tail(db, log, scratch, [&](const std::vector<SeriesPoints>& series) {
    for (const auto& s : series) {
      for (const Point& p : s.points) {
        if (keep(p)) pool.add(s.key, p);
      }
    }
  }));
  if (!pool.exact()) return fail(Error::internal("the tail decoded differently from its count"));
  return {};
}

}  // namespace cardiac::store
