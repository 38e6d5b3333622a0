// SPDX-License-Identifier: Apache-2.0
#include "top/glyphs.h"

#include <algorithm>
#include <cmath>

namespace cardiac::top {
namespace {

// Left blocks of 1/8 .. 7/8 of a cell.
constexpr const char* kPartial[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
constexpr const char* kLevels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr char kAsciiLevels[] = "_.:-=+*#";

}  // namespace

std::string bar(double fraction, std::size_t width, bool utf8) {
  const double f = std::isnan(fraction) ? 0.0 : std::clamp(fraction, 0.0, 1.0);
  std::string out;
  if (!utf8) {
    const auto filled = static_cast<std::size_t>(std::lround(f * static_cast<double>(width)));
    out.append(filled, '#');
    out.append(width - filled, '.');
    return out;
  }
  const auto eighths = static_cast<std::size_t>(std::lround(f * static_cast<double>(width) * 8));
  const std::size_t full = eighths / 8;
  const std::size_t part = eighths % 8;
  for (std::size_t i = 0; i < full; ++i) out += "█";
  std::size_t used = full;
  if (part > 0) {
    out += kPartial[part];
    ++used;
  }
  for (; used < width; ++used) out += "░";
  return out;
}

std::string sparkline(std::span<const std::optional<double>> values, double max, std::size_t width,
                      bool utf8) {
  std::string out;
  const std::size_t shown = std::min(values.size(), width);
  out.append(width - shown, ' ');
  for (std::size_t i = values.size() - shown; i < values.size(); ++i) {
    const auto& v = values[i];
    if (!v || std::isnan(*v)) {
      out += ' ';
      continue;
    }
    int level = 0;
    if (max > 0 && *v > 0) level = std::min(7, static_cast<int>(std::floor(*v / max * 8)));
    if (utf8) {
      out += kLevels[level];
    } else {
      out += kAsciiLevels[level];
    }
  }
  return out;
}

}  // namespace cardiac::top
