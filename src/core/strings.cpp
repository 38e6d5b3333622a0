// SPDX-License-Identifier: Apache-2.0
// String helpers.
#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

namespace cardiac {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

namespace {

// The next run of non-blank characters at or after `i` (empty at the end); `i` moves past it.
std::string_view next_field(std::string_view s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  const std::size_t start = i;
  while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
  return s.substr(start, i - start);
}

}  // namespace

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  for (auto f = next_field(s, i); !f.empty(); f = next_field(s, i)) out.push_back(f);
  return out;
}

std::size_t split_ws_into(std::string_view s, std::span<std::string_view> out) {
  std::size_t n = 0;
  std::size_t i = 0;
  for (auto f = next_field(s, i); !f.empty() && n < out.size(); f = next_field(s, i)) out[n++] = f;
  return n;
}

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t pos = s.find('\n', start);
    size_t end = pos == std::string_view::npos ? s.size() : pos;
    std::string_view line = s.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.ends_with(suffix);
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::uint64_t> parse_u64(std::string_view s, int base) {
  s = trim(s);
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_i64(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_duration_ns(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (auto plain = parse_double(s)) {
    if (!(*plain >= 0 && *plain * 1e9 <= 9.2e18)) return std::nullopt;  // also NaN
    return static_cast<std::int64_t>(*plain * 1e9);
  }
  double total = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    auto num = parse_double(s.substr(start, i - start));
    if (!num) return std::nullopt;
    size_t ustart = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(ustart, i - ustart);
    double mult = 0;
    if (unit == "ns")
      mult = 1;
    else if (unit == "us")
      mult = 1e3;
    else if (unit == "ms")
      mult = 1e6;
    else if (unit == "s")
      mult = 1e9;
    else if (unit == "m")
      mult = 60e9;
    else if (unit == "h")
      mult = 3600e9;
    else if (unit == "d")
      mult = 86400e9;
    else if (unit == "w")
      mult = 7 * 86400e9;
    else
      return std::nullopt;
    total += *num * mult;
  }
  // Past ~292 years a duration no longer fits in int64 nanoseconds: not a duration we accept.
  if (!(total >= -9.2e18 && total <= 9.2e18)) return std::nullopt;
  return static_cast<std::int64_t>(total);
}

}  // namespace cardiac
