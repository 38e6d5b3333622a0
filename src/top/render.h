// SPDX-License-Identifier: Apache-2.0
// A whole screen as styled text: the header, the current view's table (and the selected GPU's
// detail with sparklines), the footer with the keys. Pure: the same snapshot, history, state
// and size give the same frame, every line exactly `width` columns, exactly `height` lines.
// The terminal side (screen.h) only paints spans with the attributes of their styles.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/clock.h"
#include "top/history.h"
#include "top/layout.h"
#include "top/snapshot.h"
#include "top/view.h"

namespace cardiac::top {

// What a span means; screen.cpp maps each to colours or, without colour, to bold/reverse.
enum class Style {
  kNormal,
  kTitle,      // the first line
  kHeader,     // column headers
  kTab,        // an inactive view's tab
  kTabActive,  // the current view's tab
  kSelected,   // the selected row
  kOk,
  kWarn,
  kFail,
  kDim,
  kBar,  // a plain bar or sparkline
};

struct Span {
  std::string text;
  Style style = Style::kNormal;
};

struct Line {
  std::vector<Span> spans;
  std::string text() const;  // the spans' text joined
};

struct Frame {
  std::vector<Line> lines;
  std::string text() const;  // every line's text, each followed by '\n'
};

struct RenderOptions {
  std::size_t width = 80;
  std::size_t height = 24;
  bool utf8 = true;
  TimeNs now = 0;           // for "firing for" and job times
  double interval_s = 1.0;  // shown in the help
};

// The columns of each table, in order, with their widths and drop ranks (docs/top.md).
std::span<const ColumnSpec> gpu_columns();
std::span<const ColumnSpec> process_columns();
std::span<const ColumnSpec> alert_columns();
std::span<const ColumnSpec> queue_columns();

Frame render(const Snapshot& s, const History& h, const ViewState& v, const RenderOptions& o);

// "1h 02m", "5m 03s", "42s" (negative: "0s").
std::string short_duration(DurationNs d);

// Builds one line of exactly `width` columns: text past the width is cut with a mark.
class LineBuilder {
 public:
  LineBuilder(std::size_t width, bool utf8) : width_(width), utf8_(utf8) {}
  // Appends `text` (already clean()) in `style`.
  void add(std::string_view text, Style style = Style::kNormal);
  // Appends `text` fitted to exactly `cells` columns.
  void cell(std::string_view text, std::size_t cells, Style style = Style::kNormal,
            Align align = Align::kLeft);
  std::size_t used() const { return used_; }
  // Pads with spaces in `fill` to the full width.
  Line done(Style fill = Style::kNormal);

 private:
  std::size_t width_;
  bool utf8_;
  std::size_t used_ = 0;
  Line line_;
};

}  // namespace cardiac::top
