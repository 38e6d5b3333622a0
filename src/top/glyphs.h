// SPDX-License-Identifier: Apache-2.0
// Bars and sparklines as text: Unicode block elements with UTF-8, plain ASCII without.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace cardiac::top {

// `fraction` (clamped to 0..1) of `width` cells filled. UTF-8: full blocks, then one partial
// block in eighths ("▏▎▍▌▋▊▉"), the rest "░"; rounded to the nearest eighth of a cell.
// ASCII: '#' rounded to whole cells, the rest '.'. Not a number: all empty.
std::string bar(double fraction, std::size_t width, bool utf8);

// The last `width` values as one glyph each, oldest left, padded on the left with spaces
// while the history is shorter. A value v of 0..max picks level floor(8 v / max), capped at 7,
// of "▁▂▃▄▅▆▇█" (ASCII "_.:-=+*#"); a missing value is a space.
std::string sparkline(std::span<const std::optional<double>> values, double max, std::size_t width,
                      bool utf8);

}  // namespace cardiac::top
