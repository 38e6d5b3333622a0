// SPDX-License-Identifier: Apache-2.0
// Hand-written scanners for kernel-log record and line prefixes (no std::regex: hot path).
#include "kmsg/record.h"

#include "kmsg/scan.h"

namespace cardiac::kmsg {
namespace {

using namespace detail;

// "hh:mm:ss" -> seconds of the day.
std::optional<std::int64_t> eat_hms(std::string_view& s) {
  auto h = eat_fixed(s, 2);
  if (!h || !eat(s, ":")) return std::nullopt;
  auto m = eat_fixed(s, 2);
  if (!m || !eat(s, ":")) return std::nullopt;
  auto sec = eat_fixed(s, 2);
  if (!sec || *h > 23 || *m > 59 || *sec > 60) return std::nullopt;
  return *h * 3600 + *m * 60 + *sec;
}

// Optional ".ffffff" fraction -> nanoseconds (extra digits beyond 9 are dropped).
std::int64_t eat_fraction_ns(std::string_view& s) {
  if (s.empty() || s.front() != '.') return 0;
  std::string_view t = s.substr(1);
  std::int64_t ns = 0;
  int digits = 0;
  while (!t.empty() && is_digit(t.front())) {
    if (digits < 9) {
      ns = ns * 10 + (t.front() - '0');
      ++digits;
    }
    t.remove_prefix(1);
  }
  if (digits == 0) return 0;
  for (int i = digits; i < 9; ++i) ns *= 10;
  s = t;
  return ns;
}

bool plausible_wall(std::int64_t ns) {
  return ns >= 0 && ns < kMaxWallNs;
}

// nullopt outside the plausible range: a year like 2300 would overflow int64 nanoseconds.
std::optional<std::int64_t> wall_ns(int year, int month, int day, std::int64_t sod,
                                    std::int64_t frac_ns) {
  if (year < 1970 || year >= 2200) return std::nullopt;
  const std::int64_t ns =
      (days_from_civil(year, month, day) * 86400 + sod) * 1'000'000'000LL + frac_ns;
  if (!plausible_wall(ns)) return std::nullopt;
  return ns;
}

// "[  123.456789]" -> microseconds. nullopt when the bracket holds no such stamp.
std::optional<std::int64_t> eat_mono_stamp(std::string_view& s) {
  std::string_view t = s;
  if (!eat(t, "[")) return std::nullopt;
  skip_spaces(t);
  auto sec = eat_uint(t, 12);
  if (!sec || !eat(t, ".")) return std::nullopt;
  std::string_view before = t;
  auto frac = eat_uint(t, 9);
  if (!frac || !eat(t, "]")) return std::nullopt;
  std::int64_t us = *frac;
  // dmesg prints 6 digits; syslog copies may have fewer: scale to microseconds.
  for (std::size_t n = before.size() - t.size() - 1; n < 6; ++n) us *= 10;
  for (std::size_t n = before.size() - t.size() - 1; n > 6; --n) us /= 10;
  s = t;
  return *sec * 1'000'000 + us;
}

// "Tue Mar  5 22:23:56 2024]" (after '[') -> true, with the wall ns when plausible.
bool eat_ctime_stamp(std::string_view& s, std::optional<std::int64_t>& ns) {
  std::string_view t = s;
  if (t.size() < 4 || t[3] != ' ') return false;
  t.remove_prefix(4);  // weekday: not needed, the date fixes it
  auto month = eat_month(t);
  if (!month) return false;
  skip_spaces(t);
  auto day = eat_uint(t, 2);
  if (!day || !eat(t, " ")) return false;
  auto sod = eat_hms(t);
  if (!sod || !eat(t, " ")) return false;
  auto year = eat_fixed(t, 4);
  if (!year || !eat(t, "]") || *day < 1 || *day > 31) return false;
  s = t;
  ns = wall_ns(*year, *month, static_cast<int>(*day), *sod, 0);
  return true;
}

// Fabric Manager: "Mar 05 2024 22:23:56]" (after '[') -> true, with the wall ns when
// plausible. FM writes local time.
bool eat_fm_stamp(std::string_view& s, std::optional<std::int64_t>& ns) {
  std::string_view t = s;
  auto month = eat_month(t);
  if (!month || !eat(t, " ")) return false;
  skip_spaces(t);
  auto day = eat_uint(t, 2);
  if (!day || *day < 1 || *day > 31 || !eat(t, " ")) return false;
  auto year = eat_fixed(t, 4);
  if (!year || !eat(t, " ")) return false;
  auto sod = eat_hms(t);
  if (!sod || !eat(t, "]")) return false;
  s = t;
  ns = wall_ns(*year, *month, static_cast<int>(*day), *sod, 0);
  return true;
}

// After the time: "host kernel: " (journal and syslog). Returns false for other programs.
bool eat_host_kernel_tag(std::string_view& s) {
  skip_spaces(s);
  auto sp = s.find(' ');
  if (sp == std::string_view::npos || sp == 0) return false;
  std::string_view t = s.substr(sp + 1);
  if (!eat(t, "kernel: ") && !eat(t, "kernel:")) return false;
  s = t;
  return true;
}

// A trailing "[  123.456] " inside syslog/journal lines (kernels with printk.time=1).
void eat_optional_mono(std::string_view& s, LogLine& out) {
  skip_spaces(s);
  std::string_view t = s;
  if (auto us = eat_mono_stamp(t)) {
    out.monotonic_us = us;
    skip_spaces(t);
    s = t;
  }
}

std::optional<LogLine> parse_bracket(std::string_view s) {
  LogLine out;
  std::string_view t = s;
  if (auto us = eat_mono_stamp(t)) {
    out.format = LineFormat::kDmesg;
    out.monotonic_us = us;
    if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    // journalctl -o short-monotonic: "[  123.456789] host kernel: msg".
    std::string_view j = t;
    if (eat_host_kernel_tag(j)) t = j;
    out.message = t;
    return out;
  }
  t = s.substr(1);
  if (eat_ctime_stamp(t, out.time_ns)) {
    out.format = LineFormat::kDmesgWall;
    if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    out.message = t;
    return out;
  }
  t = s.substr(1);
  if (eat_fm_stamp(t, out.time_ns)) {
    out.format = LineFormat::kFabricManager;
    if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    out.message = t;
    return out;
  }
  // "[  12" or "[Tue Mar" cut short: a stamp was started but not finished.
  std::string_view inner = s.substr(1);
  skip_spaces(inner);
  if (inner.empty() || is_digit(inner.front())) return std::nullopt;
  if (s.find(']') == std::string_view::npos && s.size() < 28) return std::nullopt;
  out.message = s;  // e.g. "[drm] Initialized": a plain message that starts with '['
  return out;
}

std::optional<LogLine> parse_syslog(std::string_view s, int year_hint) {
  std::string_view t = s;
  auto month = eat_month(t);
  if (!month || !eat(t, " ")) return std::nullopt;
  skip_spaces(t);
  auto day = eat_uint(t, 2);
  if (!day || *day < 1 || *day > 31 || !eat(t, " ")) return std::nullopt;
  auto sod = eat_hms(t);
  if (!sod) return std::nullopt;
  std::int64_t frac = eat_fraction_ns(t);  // journalctl -o short-precise
  if (t.empty() || t.front() != ' ') return std::nullopt;
  if (!eat_host_kernel_tag(t)) return std::nullopt;
  LogLine out;
  out.format = LineFormat::kSyslog;
  if (year_hint > 0) out.time_ns = wall_ns(year_hint, *month, static_cast<int>(*day), *sod, frac);
  eat_optional_mono(t, out);
  out.message = t;
  return out;
}

std::optional<LogLine> parse_iso(std::string_view s) {
  std::string_view t = s;
  auto y = eat_fixed(t, 4);
  if (!y || !eat(t, "-")) return std::nullopt;
  auto mo = eat_fixed(t, 2);
  if (!mo || !eat(t, "-")) return std::nullopt;
  auto d = eat_fixed(t, 2);
  if (!d || (!eat(t, "T") && !eat(t, " "))) return std::nullopt;
  auto sod = eat_hms(t);
  if (!sod || *mo < 1 || *mo > 12 || *d < 1 || *d > 31) return std::nullopt;
  std::int64_t frac = eat_fraction_ns(t);
  std::int64_t offset_s = 0;
  if (eat(t, "Z")) {
  } else if (!t.empty() && (t.front() == '+' || t.front() == '-')) {
    const int sign = t.front() == '-' ? -1 : 1;
    t.remove_prefix(1);
    auto oh = eat_fixed(t, 2);
    eat(t, ":");
    auto om = eat_fixed(t, 2);
    if (!oh || !om) return std::nullopt;
    offset_s = sign * (std::int64_t{*oh} * 3600 + *om * 60);
  }
  if (!eat_host_kernel_tag(t)) return std::nullopt;
  LogLine out;
  out.format = LineFormat::kIso;
  out.time_ns = wall_ns(*y, *mo, *d, *sod - offset_s, frac);
  eat_optional_mono(t, out);
  out.message = t;
  return out;
}

}  // namespace

std::optional<std::int64_t> wall_from_monotonic(std::int64_t boot_time_ns,
                                                std::int64_t monotonic_us) {
  if (!plausible_wall(boot_time_ns) || monotonic_us < 0 ||
      monotonic_us > (kMaxWallNs - boot_time_ns) / 1000) {
    return std::nullopt;
  }
  return boot_time_ns + monotonic_us * 1000;
}

std::optional<std::int64_t> boot_from_stamps(std::int64_t time_ns, std::int64_t monotonic_us) {
  if (!plausible_wall(time_ns) || monotonic_us < 0 || monotonic_us > time_ns / 1000) {
    return std::nullopt;
  }
  return time_ns - monotonic_us * 1000;
}

std::string unescape_kmsg(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (std::size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    if (c == '\\' && i + 3 < message.size() && message[i + 1] == 'x') {
      const int hi = hex_value(message[i + 2]);
      const int lo = hex_value(message[i + 3]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 3;
        continue;
      }
    }
    out.push_back(c);
  }
  return out;
}

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  std::string_view s = record;
  KmsgRecord r;
  auto prefix = eat_uint(s, 4);
  if (!prefix || !eat(s, ",")) return std::nullopt;
  auto seq = eat_uint(s, 18);
  if (!seq || !eat(s, ",")) return std::nullopt;
  auto ts = eat_uint(s, 18);
  if (!ts || !eat(s, ",")) return std::nullopt;
  if (s.empty() || s.front() == ';' || s.front() == ',' || s.front() == '\n') return std::nullopt;
  r.flags = s.front();
  s.remove_prefix(1);
  // The kernel may append more comma-separated fields before ';' (documented as future use).
  auto semi = s.find(';');
  if (semi == std::string_view::npos || semi > 64) return std::nullopt;
  std::string_view extra = s.substr(0, semi);
  if (!extra.empty() && extra.front() != ',') return std::nullopt;
  if (extra.find('\n') != std::string_view::npos) return std::nullopt;
  s.remove_prefix(semi + 1);
  auto nl = s.find('\n');
  if (nl != std::string_view::npos) s = s.substr(0, nl);
  r.priority = static_cast<int>(*prefix & 7);
  r.facility = static_cast<int>(*prefix >> 3);
  r.sequence = static_cast<std::uint64_t>(*seq);
  r.timestamp_us = *ts;
  r.message = s;
  return r;
}

std::optional<LogLine> parse_log_line(std::string_view line, int year_hint) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.find('\0') != std::string_view::npos) return std::nullopt;
  std::string_view s = line;
  skip_spaces(s);
  if (s.empty()) return std::nullopt;
  if (is_digit(s.front())) {
    if (auto rec = parse_kmsg_record(s)) {
      LogLine out;
      out.format = LineFormat::kKmsg;
      out.monotonic_us = rec->timestamp_us;
      out.message = rec->message;
      out.facility = rec->facility;
      return out;
    }
    // "YYYY-MM-DD": an ISO-stamped line is either a kernel line or not ours.
    if (s.size() > 10 && s[4] == '-' && s[7] == '-') return parse_iso(s);
  }
  // dmesg -r / --raw keeps the "<6>" level prefix in front of the stamp.
  if (s.front() == '<') {
    std::string_view t = s.substr(1);
    if (eat_uint(t, 4) && eat(t, ">") && !t.empty() && t.front() == '[') s = t;
  }
  if (s.front() == '[') return parse_bracket(s);
  if (s.size() >= 4 && s[3] == ' ') {
    std::string_view t = s;
    if (eat_month(t)) return parse_syslog(s, year_hint);  // a month-led line must be syslog
  }
  LogLine out;
  out.message = s;
  return out;
}

}  // namespace cardiac::kmsg
