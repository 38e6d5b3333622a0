// SPDX-License-Identifier: Apache-2.0
// Formatting of timestamps (int64 ns UTC) and durations for output.
#pragma once

#include <string>

#include "core/clock.h"

namespace cardiac {

// "2026-12-02T16:35:10.123Z" (millisecond precision, always UTC).
std::string format_iso8601(TimeNs t);
// "1h 02m", "3.2 s", "450 ms": short human durations.
std::string format_duration(DurationNs d);

}  // namespace cardiac
