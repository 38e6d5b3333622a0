// SPDX-License-Identifier: Apache-2.0
// Bit streams and Gorilla's XOR coding of doubles, shared by the sample codec (chunk.h) and the
// minute blocks (minute_blocks.h).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "store/chunk.h"

namespace cardiac::store {

class BitWriter {
 public:
  explicit BitWriter(std::string& out) : out_(out) {}
  // Appends the low `n` bits of `v` (n <= 64), most significant first.
  void put(std::uint64_t v, int n) {
    while (n > 0) {
      const int room = 8 - used_;
      const int take = std::min(room, n);
      const auto chunk = static_cast<std::uint8_t>((v >> (n - take)) & ((1u << take) - 1));
      if (used_ == 0) out_.push_back('\0');
      out_.back() = static_cast<char>(static_cast<std::uint8_t>(out_.back()) |
                                      static_cast<std::uint8_t>(chunk << (room - take)));
      used_ = (used_ + take) % 8;
      n -= take;
    }
  }
  void bit(bool b) { put(b ? 1 : 0, 1); }

 private:
  std::string& out_;
  int used_ = 0;  // bits used in out_.back(); 0 = start a new byte
};

class BitReader {
 public:
  explicit BitReader(std::string_view data) : data_(data) {}
  // Reads `n` bits (n <= 64); false when the data ends first.
  bool get(int n, std::uint64_t& v) {
    if (n > 56) {
      std::uint64_t hi = 0;
      std::uint64_t lo = 0;
      if (!get(n - 32, hi) || !get(32, lo)) return false;
      v = (hi << 32) | lo;
      return true;
    }
    refill(n);
    if (avail_ < n) return false;
    v = n == 0 ? 0 : (buf_ >> (avail_ - n)) & (~std::uint64_t{0} >> (64 - n));
    avail_ -= n;
    return true;
  }
  bool bit(bool& b) {
    std::uint64_t v = 0;
    if (!get(1, v)) return false;
    b = v != 0;
    return true;
  }
  // The next `n` bits (1 <= n <= 56) without consuming them; bits past the end read as 0, so a
  // prefix can be matched in one step and then consumed with skip(), which checks the length.
  std::uint64_t peek(int n) {
    refill(n);
    const std::uint64_t mask = ~std::uint64_t{0} >> (64 - n);
    return (avail_ >= n ? buf_ >> (avail_ - n) : buf_ << (n - avail_)) & mask;
  }
  bool skip(int n) {
    (void)peek(n);  // refills
    if (avail_ < n) return false;
    avail_ -= n;
    return true;
  }
  // Whole bytes go into a 64-bit buffer whose low `avail_` bits are unread: at least `n` when
  // the data has them (n <= 56). Eight bytes at a time while they last, one at a time at the end.
  void refill(int n) {
    if (avail_ >= n) return;
    if (data_.size() - pos_ >= 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, data_.data() + pos_, sizeof word);
      if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
      const int take = (63 - avail_) / 8;  // whole bytes that fit: 1..7
      buf_ = (buf_ << (take * 8)) | (word >> (64 - take * 8));
      pos_ += static_cast<std::size_t>(take);
      avail_ += take * 8;
      return;
    }
    while (avail_ < n && pos_ < data_.size()) {
      buf_ = (buf_ << 8) | static_cast<std::uint8_t>(data_[pos_++]);
      avail_ += 8;
    }
  }
  [[nodiscard]] std::uint64_t bits_left() const {
    return (data_.size() - pos_) * 8 + static_cast<std::uint64_t>(avail_);
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
  std::uint64_t buf_ = 0;
  int avail_ = 0;
};

// Gorilla's value coding, each value XORed with the previous one of `s`: '0' the same value;
// '10' + the meaningful bits inside the previous window; '11' + 5 bits of leading zeros + 6 bits
// of length - 1 + the meaningful bits. The first value of a state is its 64 bits.
void put_value(BitWriter& w, XorState& s, double value);
// False when the data ends first or names a window it never set.
[[nodiscard]] bool get_value(BitReader& r, XorState& s, double& value);

}  // namespace cardiac::store
