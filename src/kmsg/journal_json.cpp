// SPDX-License-Identifier: Apache-2.0
// `journalctl -o json` lines: a small hand-written scanner that picks out the few fields the
// kernel-log readers need (a DOM per line would cost more than everything else together).
#include <cstdint>

#include "kmsg/record.h"
#include "kmsg/scan.h"

namespace cardiac::kmsg {
namespace {

using namespace detail;

void skip_ws(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
}

void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

std::optional<std::uint32_t> eat_hex4(std::string_view& s) {
  if (s.size() < 4) return std::nullopt;
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = hex_value(s[static_cast<std::size_t>(i)]);
    if (h < 0) return std::nullopt;
    v = v * 16 + static_cast<std::uint32_t>(h);
  }
  s.remove_prefix(4);
  return v;
}

// A JSON string starting at '"'. `out` may be null to skip the value.
bool eat_string(std::string_view& s, std::string* out) {
  if (!eat(s, "\"")) return false;
  while (!s.empty()) {
    const char c = s.front();
    s.remove_prefix(1);
    if (c == '"') return true;
    if (c != '\\') {
      if (out) out->push_back(c);
      continue;
    }
    if (s.empty()) return false;
    const char e = s.front();
    s.remove_prefix(1);
    char plain = 0;
    switch (e) {
      case 'n':
        plain = '\n';
        break;
      case 't':
        plain = '\t';
        break;
      case 'r':
        plain = '\r';
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case '/':
        plain = '/';
        break;
      case '\\':
        plain = '\\';
        break;
      case '"':
        plain = '"';
        break;
      case 'u': {
        auto cp = eat_hex4(s);
        if (!cp) return false;
        // A surrogate pair spells one code point outside the BMP.
        if (*cp >= 0xd800 && *cp < 0xdc00 && s.size() >= 6 && s[0] == '\\' && s[1] == 'u') {
          std::string_view t = s.substr(2);
          if (auto lo = eat_hex4(t); lo && *lo >= 0xdc00 && *lo < 0xe000) {
            cp = 0x10000 + ((*cp - 0xd800) << 10) + (*lo - 0xdc00);
            s = t;
          }
        }
        if (out) put_utf8(*out, *cp);
        continue;
      }
      default:
        return false;
    }
    if (out) out->push_back(plain);
  }
  return false;
}

bool skip_value(std::string_view& s, int depth);

// journald writes a field that is not valid UTF-8 as an array of byte values.
bool eat_byte_array(std::string_view& s, std::string* out) {
  if (!eat(s, "[")) return false;
  skip_ws(s);
  if (eat(s, "]")) return true;
  while (true) {
    skip_ws(s);
    auto v = eat_uint(s, 3);
    if (!v || *v > 255) return false;
    if (out) out->push_back(static_cast<char>(*v));
    skip_ws(s);
    if (eat(s, "]")) return true;
    if (!eat(s, ",")) return false;
  }
}

bool skip_container(std::string_view& s, char open, char close, int depth) {
  if (depth > 8 || !eat(s, std::string_view(&open, 1))) return false;
  skip_ws(s);
  if (eat(s, std::string_view(&close, 1))) return true;
  while (true) {
    skip_ws(s);
    if (open == '{') {
      if (!eat_string(s, nullptr)) return false;
      skip_ws(s);
      if (!eat(s, ":")) return false;
      skip_ws(s);
    }
    if (!skip_value(s, depth + 1)) return false;
    skip_ws(s);
    if (eat(s, std::string_view(&close, 1))) return true;
    if (!eat(s, ",")) return false;
  }
}

bool skip_value(std::string_view& s, int depth) {
  if (s.empty()) return false;
  switch (s.front()) {
    case '"':
      return eat_string(s, nullptr);
    case '[':
      return skip_container(s, '[', ']', depth);
    case '{':
      return skip_container(s, '{', '}', depth);
    default:
      break;
  }
  std::size_t n = 0;
  while (n < s.size() && s[n] != ',' && s[n] != '}' && s[n] != ']' && s[n] != ' ') ++n;
  if (n == 0) return false;
  s.remove_prefix(n);
  return true;
}

// A field holding a decimal number written as a string ("1700000000123456").
std::optional<std::int64_t> as_number(const std::string& v) {
  std::string_view t = v;
  auto n = eat_uint(t, 18);
  if (!n || !t.empty()) return std::nullopt;
  return n;
}

}  // namespace

std::optional<JournalEntry> parse_journal_json(std::string_view line) {
  std::string_view s = line;
  skip_ws(s);
  if (!eat(s, "{")) return std::nullopt;
  JournalEntry e;
  bool have_message = false;
  std::optional<std::int64_t> journal_mono;
  std::string value;
  std::string key;
  skip_ws(s);
  if (eat(s, "}")) return std::nullopt;
  while (true) {
    skip_ws(s);
    key.clear();
    if (!eat_string(s, &key)) return std::nullopt;
    skip_ws(s);
    if (!eat(s, ":")) return std::nullopt;
    skip_ws(s);
    const bool wanted = key == "MESSAGE" || key == "__REALTIME_TIMESTAMP" ||
                        key == "_SOURCE_MONOTONIC_TIMESTAMP" || key == "__MONOTONIC_TIMESTAMP" ||
                        key == "_BOOT_ID" || key == "_TRANSPORT" || key == "SYSLOG_IDENTIFIER";
    value.clear();
    if (!wanted) {
      if (!skip_value(s, 0)) return std::nullopt;
    } else if (!s.empty() && s.front() == '"') {
      if (!eat_string(s, &value)) return std::nullopt;
    } else if (!s.empty() && s.front() == '[' && key == "MESSAGE") {
      if (!eat_byte_array(s, &value)) return std::nullopt;
    } else if (!skip_value(s, 0)) {
      return std::nullopt;
    }
    if (key == "MESSAGE") {
      e.message = value;
      have_message = true;
    } else if (key == "__REALTIME_TIMESTAMP") {
      if (auto us = as_number(value)) e.time_ns = wall_from_monotonic(0, *us);  // µs → ns
    } else if (key == "_SOURCE_MONOTONIC_TIMESTAMP") {
      if (auto us = as_number(value)) e.monotonic_us = us;
    } else if (key == "__MONOTONIC_TIMESTAMP") {
      journal_mono = as_number(value);
    } else if (key == "_BOOT_ID") {
      e.boot_id = value;
    } else if (key == "_TRANSPORT" || key == "SYSLOG_IDENTIFIER") {
      e.kernel = e.kernel && value == "kernel";
    }
    skip_ws(s);
    if (eat(s, "}")) break;
    if (!eat(s, ",")) return std::nullopt;
  }
  if (!have_message) return std::nullopt;
  // The journal's own receive time is a close stand-in when the kernel's stamp is missing.
  if (!e.monotonic_us && e.kernel) e.monotonic_us = journal_mono;
  return e;
}

}  // namespace cardiac::kmsg
