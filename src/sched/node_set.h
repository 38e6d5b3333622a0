// SPDX-License-Identifier: Apache-2.0
// A set of node indices with constant-time insert/erase and a fast "first member at or after",
// alone or within a second set.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace cardiac::sched::detail {

// The placement keeps one set per free-GPU count; finding a node with enough free GPUs is then
// a lookup in a few sets instead of a walk over the cluster. A summary word per 64 words keeps
// next() short on sparse sets of 100k-GPU clusters.
class NodeSet {
 public:
  static constexpr unsigned kNone = ~0u;

  void resize(unsigned n) {
    words_.assign((n + 63) / 64, 0);
    summary_.assign((words_.size() + 63) / 64, 0);
    count_ = 0;
  }
  [[nodiscard]] unsigned size() const { return count_; }
  [[nodiscard]] bool empty() const { return count_ == 0; }

  void insert(unsigned i) {
    std::uint64_t& w = words_[i >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (i & 63);
    if (w & bit) return;
    if (w == 0) summary_[i >> 12] |= std::uint64_t{1} << ((i >> 6) & 63);
    w |= bit;
    ++count_;
  }
  void erase(unsigned i) {
    std::uint64_t& w = words_[i >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (i & 63);
    if (!(w & bit)) return;
    w &= ~bit;
    if (w == 0) summary_[i >> 12] &= ~(std::uint64_t{1} << ((i >> 6) & 63));
    --count_;
  }
  [[nodiscard]] bool contains(unsigned i) const { return (words_[i >> 6] >> (i & 63)) & 1; }

  // The smallest member >= from, or kNone.
  [[nodiscard]] unsigned next(unsigned from) const {
    std::size_t wi = from >> 6;
    if (wi >= words_.size()) return kNone;
    std::uint64_t w = words_[wi] & (~std::uint64_t{0} << (from & 63));
    if (w) return static_cast<unsigned>((wi << 6) + std::countr_zero(w));
    const std::size_t after = wi + 1;
    std::size_t si = after >> 6;
    if (si >= summary_.size()) return kNone;
    std::uint64_t s = summary_[si] & (~std::uint64_t{0} << (after & 63));
    while (s == 0) {
      if (++si >= summary_.size()) return kNone;
      s = summary_[si];
    }
    const std::size_t wj = (si << 6) + std::countr_zero(s);
    return static_cast<unsigned>((wj << 6) + std::countr_zero(words_[wj]));
  }

  // The smallest member >= from that `mask` also holds, or kNone; `mask` has the same size.
  // Words only one of the two sets uses are skipped through both summaries.
  [[nodiscard]] unsigned next_and(const NodeSet& mask, unsigned from) const {
    std::size_t wi = from >> 6;
    if (wi >= words_.size()) return kNone;
    const std::uint64_t w = words_[wi] & mask.words_[wi] & (~std::uint64_t{0} << (from & 63));
    if (w) return static_cast<unsigned>((wi << 6) + std::countr_zero(w));
    for (++wi; wi < words_.size();) {
      const std::size_t si = wi >> 6;
      const std::uint64_t s = summary_[si] & mask.summary_[si] & (~std::uint64_t{0} << (wi & 63));
      if (s == 0) {
        wi = (si + 1) << 6;
        continue;
      }
      wi = (si << 6) + std::countr_zero(s);
      if (const std::uint64_t x = words_[wi] & mask.words_[wi]) {
        return static_cast<unsigned>((wi << 6) + std::countr_zero(x));
      }
      ++wi;
    }
    return kNone;
  }
  // The members `mask` also holds; `mask` has the same size.
  [[nodiscard]] unsigned count_and(const NodeSet& mask) const {
    unsigned c = 0;
    for (std::size_t si = 0; si < summary_.size(); ++si) {
      for (std::uint64_t s = summary_[si] & mask.summary_[si]; s != 0; s &= s - 1) {
        const std::size_t wi = (si << 6) + std::countr_zero(s);
        c += static_cast<unsigned>(std::popcount(words_[wi] & mask.words_[wi]));
      }
    }
    return c;
  }
  // Adds every member of `other`, which has the same size.
  void unite(const NodeSet& other) {
    for (std::size_t i = 0; i < words_.size(); ++i) {
      if (other.words_[i] == 0) continue;
      count_ += static_cast<unsigned>(std::popcount(other.words_[i] & ~words_[i]));
      words_[i] |= other.words_[i];
      summary_[i >> 6] |= std::uint64_t{1} << (i & 63);
    }
  }

 private:
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;
  unsigned count_ = 0;
};

}  // namespace cardiac::sched::detail
