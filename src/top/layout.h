// SPDX-License-Identifier: Apache-2.0
// Table columns fitted to the terminal's width: each column has a fixed width (one, the flex
// column, takes what is left above its minimum), and when they do not all fit the least
// important go first, so a narrow terminal (80 columns over SSH) loses columns, never has
// lines wrapped or cut mid-cell.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "top/text.h"

namespace cardiac::top {

struct ColumnSpec {
  std::string_view name;
  std::size_t width;  // the minimum, for the flex column
  int drop_rank;      // the highest rank is dropped first; 0 is never dropped
  bool flex = false;
  Align align = Align::kLeft;
};

struct Column {
  std::string_view name;
  std::size_t width;
  Align align;
};

inline constexpr std::size_t kColumnGap = 1;

// The columns that fit in `width`, in their order, one space between each.
std::vector<Column> fit_columns(std::span<const ColumnSpec> specs, std::size_t width);

}  // namespace cardiac::top
