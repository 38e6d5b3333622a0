// SPDX-License-Identifier: Apache-2.0
// Untrusted text (log lines, trace fields, user labels) made safe to print and to put in HTML.
#include "core/text.h"

namespace cardiac {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one. Overlong
// forms and surrogates are let through: they are rare in logs and harmless once escaped.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b < 0x80           ? 1
                  : (b >> 5) == 0x6  ? 2
                  : (b >> 4) == 0xE  ? 3
                  : (b >> 3) == 0x1E ? 4
                                     : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

std::string clean(std::string_view s, bool controls) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    auto c = static_cast<unsigned char>(s[i]);
    bool control = n == 1 && (c < 0x20 || c == 0x7F) && c != '\t' && c != '\n';
    if (controls && control) {
      out += kReplacement;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  return clean(text, false);
}
std::string printable(std::string_view text) {
  return clean(text, true);
}

std::string html_escape(std::string_view text) {
  std::string clean = printable(text);
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (char c : clean) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace cardiac
