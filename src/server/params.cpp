// SPDX-License-Identifier: Apache-2.0
// Parsing of query parameters (times, durations) and address classification for the HTTP API.
#include "server/params.h"

#include <cctype>
#include <chrono>
#include <string>

#include "core/strings.h"

namespace cardiac::server {
namespace {

// Reads exactly `n` digits at `pos`; advances pos.
std::optional<int> take_digits(std::string_view s, std::size_t& pos, std::size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool take_char(std::string_view s, std::size_t& pos, std::string_view allowed) {
  if (pos >= s.size() || allowed.find(s[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

bool is_unix_seconds(std::string_view s) {
  if (s.empty()) return false;
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots <= 1 && s.front() != '.' && s.back() != '.';
}

// Our own duration grammar rather than core's parse_duration_ns: input here is untrusted, and
// "inf" or "1e300" must be refused instead of overflowing int64. Units: ms s m h d.
std::optional<DurationNs> parse_duration_strict(std::string_view s, bool bare_is_seconds) {
  if (s.empty() || s.size() > 32) return std::nullopt;
  double total = 0;
  if (bare_is_seconds && is_unix_seconds(s)) {
    auto num = parse_double(s);
    if (!num) return std::nullopt;
    total = *num * 1e9;
    s = {};
  }
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (!is_unix_seconds(s.substr(start, i - start))) return std::nullopt;
    auto num = parse_double(s.substr(start, i - start));
    std::size_t ustart = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(ustart, i - ustart);
    double mult = unit == "ms"  ? 1e6
                  : unit == "s" ? 1e9
                  : unit == "m" ? 60e9
                  : unit == "h" ? 3600e9
                  : unit == "d" ? 86400e9
                                : 0;
    if (!num || mult == 0) return std::nullopt;
    total += *num * mult;
  }
  // ~31 years: far beyond any history or silence, far below int64 overflow.
  if (!(total <= 1e18)) return std::nullopt;
  return static_cast<DurationNs>(total);
}

}  // namespace

Result<TimeNs> parse_rfc3339(std::string_view text) {
  auto bad = [&] { return fail(Error::parse("not an RFC 3339 time", std::string(text))); };
  std::size_t p = 0;
  auto year = take_digits(text, p, 4);
  if (!year || !take_char(text, p, "-")) return bad();
  auto month = take_digits(text, p, 2);
  if (!month || !take_char(text, p, "-")) return bad();
  auto day = take_digits(text, p, 2);
  if (!day || !take_char(text, p, "Tt ")) return bad();
  auto hour = take_digits(text, p, 2);
  if (!hour || !take_char(text, p, ":")) return bad();
  auto minute = take_digits(text, p, 2);
  if (!minute || !take_char(text, p, ":")) return bad();
  auto second = take_digits(text, p, 2);
  if (!second) return bad();
  std::int64_t frac_ns = 0;
  if (take_char(text, p, ".")) {
    std::int64_t scale = kNsPerSec / 10;
    std::size_t digits = 0;
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) {
      frac_ns += (text[p] - '0') * scale;  // digits past ns precision add 0
      scale /= 10;
      ++p;
      ++digits;
    }
    if (digits == 0) return bad();
  }
  std::int64_t offset_sec = 0;
  if (take_char(text, p, "Zz")) {
    // UTC
  } else if (p < text.size() && (text[p] == '+' || text[p] == '-')) {
    int sign = text[p] == '-' ? -1 : 1;
    ++p;
    auto oh = take_digits(text, p, 2);
    if (!oh || !take_char(text, p, ":")) return bad();
    auto om = take_digits(text, p, 2);
    if (!om || *oh > 23 || *om > 59) return bad();
    offset_sec = sign * (*oh * 3600LL + *om * 60LL);
  } else {
    return bad();  // RFC 3339 requires a zone: a local time would be ambiguous
  }
  if (p != text.size()) return bad();

  using namespace std::chrono;
  year_month_day ymd{std::chrono::year{*year}, std::chrono::month{static_cast<unsigned>(*month)},
                     std::chrono::day{static_cast<unsigned>(*day)}};
  // A leap second (:60) is folded into the next second, which is all a query range needs.
  if (!ymd.ok() || *hour > 23 || *minute > 59 || *second > 60) return bad();
  std::int64_t days = sys_days(ymd).time_since_epoch().count();
  std::int64_t secs = days * 86400 + *hour * 3600LL + *minute * 60LL + *second - offset_sec;
  return secs * kNsPerSec + frac_ns;
}

Result<TimeNs> parse_time_param(std::string_view text, TimeNs now) {
  text = trim(text);
  if (text.empty()) return fail(Error::invalid("empty time"));
  if (is_unix_seconds(text)) {
    // Integer and fraction apart: a double cannot hold ns since 1970 exactly.
    auto dot = text.find('.');
    auto secs = parse_i64(text.substr(0, dot));
    // Beyond year ~2262 int64 ns overflows; refuse rather than wrap.
    if (!secs || *secs > 9'000'000'000LL) {
      return fail(Error::invalid("unix seconds out of range", std::string(text)));
    }
    std::int64_t frac_ns = 0;
    if (dot != std::string_view::npos) {
      std::int64_t scale = kNsPerSec / 10;
      for (char c : text.substr(dot + 1)) {
        frac_ns += (c - '0') * scale;
        scale /= 10;
      }
    }
    return *secs * kNsPerSec + frac_ns;
  }
  // "YYYY-" marks an absolute time; everything else must be a duration back from now.
  if (text.size() > 4 && text[4] == '-') return parse_rfc3339(text);
  auto d = parse_duration_strict(text, /*bare_is_seconds=*/false);
  if (!d) {
    return fail(Error::invalid("expected a duration (1h), RFC 3339 time or unix seconds, got '" +
                               std::string(text) + "'"));
  }
  return now - *d;
}

Result<DurationNs> parse_duration_param(std::string_view text) {
  auto d = parse_duration_strict(trim(text), /*bare_is_seconds=*/true);
  if (!d) {
    return fail(
        Error::invalid("expected a duration like 90s, 15m or 2h, got '" + std::string(text) + "'"));
  }
  if (*d <= 0) return fail(Error::invalid("duration must be positive"));
  return *d;
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  if (starts_with(host, "::ffff:")) host.remove_prefix(7);
  if (!starts_with(host, "127.")) return false;
  // A dotted quad under 127/8; anything else ("127.evil.com") is a name, not loopback.
  auto parts = split(host, '.');
  if (parts.size() != 4) return false;
  for (auto part : parts) {
    auto v = parse_u64(part);
    if (!v || *v > 255 || part.empty()) return false;
  }
  return true;
}

}  // namespace cardiac::server
