// SPDX-License-Identifier: Apache-2.0
// Parsing of query parameters (times, durations) and address classification for the HTTP API.
#pragma once

#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::server {

// "2024-05-01T12:00:00Z", "2024-05-01T12:00:00.5+02:00" → ns since the UTC epoch.
Result<TimeNs> parse_rfc3339(std::string_view text);

// A point in time as the API accepts it:
//   "1700000000" or "1700000000.25"  unix seconds (a bare number is never a duration here,
//                                     so "90" means 1970 + 90 s, not 90 s ago)
//   "2024-05-01T12:00:00Z"           RFC 3339
//   "1h", "90s", "1h30m"             that long before `now`
Result<TimeNs> parse_time_param(std::string_view text, TimeNs now);

// A positive duration with a unit ("2h", "15m"); bare numbers are seconds.
Result<DurationNs> parse_duration_param(std::string_view text);

// True for 127.0.0.0/8, ::1, IPv4-mapped loopback and "localhost". Used both for the bind
// address (is a token required?) and for the peer (may a token-less mutation proceed?).
bool is_loopback_host(std::string_view host);

}  // namespace cardiac::server
