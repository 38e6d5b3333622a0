// SPDX-License-Identifier: Apache-2.0
// Many series' points held in one block, and the instants of a seal merged in kept vectors: the
// seal and the roll-up's tail, without a heap block per series.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "store/chunk.h"

namespace cardiac::store {

// The points of a known set of series, each given its size up front, in one block. A seal's group
// of series and the tail's part of a roll-up's window were a vector per series: up to 600 points
// of 16 bytes, under the agent's mmap threshold, so glibc carved them from the arena the sampler
// shares, and whatever small block another thread kept meanwhile pinned their pages after the
// free. The one block, a few hundred kB, gets pages of its own that go back on free.
class PointPool {
 public:
  using Size = std::pair<SeriesKey, std::size_t>;

  // The series (ascending by key, no repeats) and how many points each may hold; any points
  // held before are dropped. The block keeps its capacity from one reset to the next.
  void reset(std::span<const Size> sizes);
  // Appends to `key`'s points; adds nothing for a key not in the pool, or past its size.
  void add(const SeriesKey& key, std::span<const Point> points);
  void add(const SeriesKey& key, const Point& point) {
    add(key, std::span<const Point>(&point, 1));
  }
  // Whether every series holds exactly the size it was given, none having been offered more:
  // the sizes were counted right.
  [[nodiscard]] bool exact() const;
  // `key`'s points as added; empty for a key not in the pool.
  [[nodiscard]] std::span<const Point> points(const SeriesKey& key) const;

  // Each series with its points, ascending by key.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) f(s.key, std::span<const Point>(block_.data() + s.at, s.size));
  }
  [[nodiscard]] std::size_t series() const { return slots_.size(); }

 private:
  struct Slot {
    SeriesKey key;
    std::size_t at = 0;
    std::size_t size = 0;
    std::size_t cap = 0;
  };
  [[nodiscard]] std::size_t find(const SeriesKey& key) const;  // slots_.size(): absent

  std::vector<Slot> slots_;
  std::vector<Point> block_;
  bool overflowed_ = false;
  // The tail lists a record's series in the same order every time: the next lookup is usually
  // the slot after the last one.
  mutable std::size_t hint_ = 0;
};

// The instants of a seal, ascending and without repeats, built a record at a time: a record's
// few instants are sorted and merged in, into vectors kept from record to record (a seal merges
// 600 records; a vector or two each were 1,200 heap blocks a seal).
class InstantSet {
 public:
  void add(TimeNs t) { pending_.push_back(t); }
  void add(std::span<const Point> points) {
    for (const Point& p : points) pending_.push_back(p.time);
  }
  // Merges what was added since the last merge.
  void merge();
  [[nodiscard]] const std::vector<TimeNs>& times() const { return times_; }

 private:
  std::vector<TimeNs> times_;
  std::vector<TimeNs> pending_;
  std::vector<TimeNs> merged_;
};

}  // namespace cardiac::store
