// SPDX-License-Identifier: Apache-2.0
#include "top/text.h"

#include <cstdint>

#include "core/text.h"

namespace cardiac::top {
namespace {

// The code point at `s[i]` and its length in bytes; `s` is valid UTF-8.
std::uint32_t decode(std::string_view s, std::size_t i, std::size_t& len) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    len = 1;
    return b;
  }
  len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
  if (i + len > s.size()) {
    len = s.size() - i;
    return 0xFFFD;
  }
  std::uint32_t cp = b & (0x7F >> len);
  for (std::size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

std::size_t code_point_width(std::uint32_t cp) {
  // Combining marks take no column of their own.
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
      (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE20 && cp <= 0xFE2F) || cp == 0x200B) {
    return 0;
  }
  // East Asian wide and full-width ranges, and the emoji blocks.
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF && cp != 0x303F) ||
      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
      (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
      (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD)) {
    return 2;
  }
  return 1;
}

}  // namespace

std::size_t display_width(std::string_view s) {
  std::size_t w = 0;
  for (std::size_t i = 0, len = 0; i < s.size(); i += len) w += code_point_width(decode(s, i, len));
  return w;
}

std::string clean(std::string_view s, bool utf8) {
  std::string safe = printable(s);
  std::string out;
  out.reserve(safe.size());
  for (std::size_t i = 0, len = 0; i < safe.size(); i += len) {
    const std::uint32_t cp = decode(safe, i, len);
    if (cp == '\t' || cp == '\n') {
      out += ' ';
    } else if (cp >= 0x80 && !utf8) {
      out += '?';
    } else {
      out.append(safe, i, len);
    }
  }
  return out;
}

std::string fit(std::string_view s, std::size_t width, bool utf8, Align align) {
  std::size_t w = display_width(s);
  std::string out;
  if (w > width) {
    // Keep what fits in width - 1 columns, then the mark.
    std::size_t used = 0;
    for (std::size_t i = 0, len = 0; i < s.size() && width > 0; i += len) {
      const std::size_t cw = code_point_width(decode(s, i, len));
      if (used + cw > width - 1) break;
      out.append(s, i, len);
      used += cw;
    }
    if (width > 0) {
      out += utf8 ? "…" : "~";
      ++used;
    }
    w = used;
  } else {
    out = s;
  }
  std::string pad(width - w, ' ');
  return align == Align::kLeft ? out + pad : pad + out;
}

}  // namespace cardiac::top
