// SPDX-License-Identifier: Apache-2.0
// Inline SVG charts for the HTML report (no scripts, no external resources) and the escaping
// that every piece of HTML built from log text goes through.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "doctor/finding.h"
#include "kmsg/event.h"

namespace cardiac::doctor {

using cardiac::html_escape;  // core/text.h

// A line chart of `e.series`: axes, the value range (min/max) and time range as labels, the
// unit, and `e.threshold` as a dashed line. Non-finite values are skipped. Returns "" when the
// series has no finite value (the caller then shows no chart). Width/height in pixels; values
// below 160×80 are raised to that.
std::string svg_line_chart(const Evidence& e, int width = 560, int height = 180);

// A timeline of kernel events: one row per kind (in order of first appearance), one dot per
// event with a time, the event's line as its tooltip. Returns "" when no event has a time.
// At most `max_dots` dots are drawn (the first ones in log order) so a storm of thousands of
// lines keeps the file small; the caption says how many were left out.
std::string svg_event_timeline(const std::vector<kmsg::KernelEvent>& events, int width = 760,
                               std::size_t max_dots = 2000);

}  // namespace cardiac::doctor
