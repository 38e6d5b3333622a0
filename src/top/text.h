// SPDX-License-Identifier: Apache-2.0
// Terminal text by display columns: what fits in a cell, cut and padded so that a line never
// runs past the screen's width and untrusted text (process and job names) cannot move the
// cursor.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cardiac::top {

enum class Align { kLeft, kRight };

// Columns `s` takes on a terminal: one per code point, two for East Asian wide characters and
// emoji, none for combining marks. `s` is valid UTF-8 (clean() makes it so).
std::size_t display_width(std::string_view s);

// Untrusted text made printable: invalid UTF-8 and control characters (tabs and newlines
// included) replaced; without UTF-8 every non-ASCII character becomes '?'.
std::string clean(std::string_view s, bool utf8);

// `s` in exactly `width` columns: cut with "…" ("~" without UTF-8) when longer, padded with
// spaces on the right (kLeft) or the left (kRight) when shorter.
std::string fit(std::string_view s, std::size_t width, bool utf8, Align align = Align::kLeft);

}  // namespace cardiac::top
