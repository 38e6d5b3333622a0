// SPDX-License-Identifier: Apache-2.0
#include "top/layout.h"

namespace cardiac::top {

std::vector<Column> fit_columns(std::span<const ColumnSpec> specs, std::size_t width) {
  std::vector<bool> kept(specs.size(), true);
  auto needed = [&] {
    std::size_t sum = 0, n = 0;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (!kept[i]) continue;
      sum += specs[i].width;
      ++n;
    }
    return n == 0 ? 0 : sum + (n - 1) * kColumnGap;
  };
  while (needed() > width) {
    // Drop the kept column with the highest rank (the rightmost among equals).
    std::size_t drop = specs.size();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (kept[i] && specs[i].drop_rank > 0 &&
          (drop == specs.size() || specs[i].drop_rank >= specs[drop].drop_rank)) {
        drop = i;
      }
    }
    if (drop == specs.size()) break;  // only the essential ones left: the line is cut instead
    kept[drop] = false;
  }
  const std::size_t used = needed();
  const std::size_t spare = width > used ? width - used : 0;
  std::vector<Column> out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!kept[i]) continue;
    out.push_back({specs[i].name, specs[i].width + (specs[i].flex ? spare : 0), specs[i].align});
  }
  return out;
}

}  // namespace cardiac::top
