// SPDX-License-Identifier: Apache-2.0
// The terminal rendering of a status report.
#pragma once

#include <string>

#include "health/report.h"

namespace cardiac::cli {

struct TextStyle {
  bool color = false;
};

// Pure: the same report always renders the same text.
std::string render_status_text(const health::StatusReport& report, const TextStyle& style);

}  // namespace cardiac::cli
