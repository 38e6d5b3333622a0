// SPDX-License-Identifier: Apache-2.0
// What the render files share (not part of the folder's interface).
#pragma once

#include <string_view>
#include <vector>

#include "top/render.h"

namespace cardiac::top {

Style verdict_style(std::string_view verdict);
// A table's column headers, padded across the line.
Line header_line(const std::vector<Column>& cols, const RenderOptions& o);
// "  text", for an empty view.
Line message_line(std::string_view text, const RenderOptions& o, Style style);
// A help screen: one line per text, the line "Keys" as a title.
std::vector<Line> help_lines(const std::vector<std::string>& text, const RenderOptions& o);
// The first row shown so that row `selected` is among `visible` rows.
std::size_t scroll_offset(std::size_t selected, std::size_t visible);

// Each view's lines (its column header first) for at most `rows` lines.
std::vector<Line> gpu_view(const Snapshot& s, const History& h, const ViewState& v,
                           const RenderOptions& o, std::size_t rows);
std::vector<Line> process_view(const Snapshot& s, const ViewState& v, const RenderOptions& o,
                               std::size_t rows);
std::vector<Line> alert_view(const Snapshot& s, const ViewState& v, const RenderOptions& o,
                             std::size_t rows);
std::vector<Line> queue_view(const Snapshot& s, const ViewState& v, const RenderOptions& o,
                             std::size_t rows);

}  // namespace cardiac::top
