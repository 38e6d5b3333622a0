// SPDX-License-Identifier: Apache-2.0
// A set of node indices with constant-time insert/erase and a fast "first member at or after".
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

 private:
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;
  unsigned count_ = 0;
};

}  // namespace cardiac::sched::detail
