// SPDX-License-Identifier: Apache-2.0
#include "store/point_pool.h"

#include <algorithm>
#include <iterator>

namespace cardiac::store {

void PointPool::reset(std::span<const Size> sizes) {
  slots_.clear();
  slots_.reserve(sizes.size());
  std::size_t total = 0;
  for (const auto& [key, n] : sizes) {
    slots_.push_back({key, total, 0, n});
    total += n;
  }
  block_.resize(total);
  hint_ = 0;
  overflowed_ = false;
}

std::size_t PointPool::find(const SeriesKey& key) const {
  if (hint_ < slots_.size() && slots_[hint_].key == key) return hint_;
  // A group is a run of keys in order: most keys a tail record offers lie outside it.
  if (slots_.empty() || key < slots_.front().key || slots_.back().key < key) return slots_.size();
  const auto it = std::lower_bound(slots_.begin(), slots_.end(), key,
                                   [](const Slot& s, const SeriesKey& k) { return s.key < k; });
  if (it == slots_.end() || it->key != key) return slots_.size();
  return static_cast<std::size_t>(it - slots_.begin());
}

void PointPool::add(const SeriesKey& key, std::span<const Point> points) {
  const std::size_t i = find(key);
  if (i == slots_.size()) return;
  hint_ = i + 1;
  Slot& s = slots_[i];
  if (points.size() > s.cap - s.size) {
    overflowed_ = true;
    return;
  }
  std::copy(points.begin(), points.end(),
            block_.begin() + static_cast<std::ptrdiff_t>(s.at + s.size));
  s.size += points.size();
}

bool PointPool::exact() const {
  return !overflowed_ &&
         std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.size == s.cap; });
}

std::span<const Point> PointPool::points(const SeriesKey& key) const {
  const std::size_t i = find(key);
  if (i == slots_.size()) return {};
  return {block_.data() + slots_[i].at, slots_[i].size};
}

void InstantSet::merge() {
  if (pending_.empty()) return;
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  if (times_.empty() || pending_.front() > times_.back()) {
    // The usual case: a record's instants come after those of the records before it.
    times_.insert(times_.end(), pending_.begin(), pending_.end());
  } else {
    merged_.clear();
    std::set_union(times_.begin(), times_.end(), pending_.begin(), pending_.end(),
                   std::back_inserter(merged_));
    times_.swap(merged_);
  }
  pending_.clear();
}

}  // namespace cardiac::store
