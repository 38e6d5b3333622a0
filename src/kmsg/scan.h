// SPDX-License-Identifier: Apache-2.0
// Internal string_view scanning helpers shared by the kmsg parsers (not a public API).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cardiac::kmsg::detail {

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Consumes `prefix` from the front of `s`; returns false (and leaves `s`) when absent.
inline bool eat(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

inline void skip_spaces(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

// Consumes 1..max_digits decimal digits. Bounded so a run of digits in garbage cannot
// overflow: callers pass the widest value the field can legitimately hold.
inline std::optional<std::int64_t> eat_uint(std::string_view& s, std::size_t max_digits = 18) {
  std::size_t n = 0;
  std::int64_t v = 0;
  while (n < s.size() && is_digit(s[n])) {
    if (n == max_digits) return std::nullopt;
    v = v * 10 + (s[n] - '0');
    ++n;
  }
  if (n == 0) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

// Consumes exactly `n` decimal digits.
inline std::optional<int> eat_fixed(std::string_view& s, std::size_t n) {
  if (s.size() < n) return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_digit(s[i])) return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  s.remove_prefix(n);
  return v;
}

// Case-insensitive substring search for ASCII needles (the hot path avoids to_lower copies).
inline bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    std::size_t j = 0;
    while (j < needle.size() && lower(hay[i + j]) == lower(needle[j])) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

inline bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && icontains(s.substr(0, prefix.size()), prefix);
}

inline int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm): avoids
// timegm(), which depends on the process time zone and is not in the C++ standard.
inline std::int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<std::int64_t>(era) * 146097 + doe - 719468;
}

// "Jan".."Dec" -> 1..12, consuming three characters.
inline std::optional<int> eat_month(std::string_view& s) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (eat(s, kMonths[i])) return i + 1;
  }
  return std::nullopt;
}

}  // namespace cardiac::kmsg::detail
