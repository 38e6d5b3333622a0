// SPDX-License-Identifier: Apache-2.0
// Timestamp and duration formatting.
#include "core/time.h"

#include <ctime>

#include "core/format.h"

namespace cardiac {

std::string format_iso8601(TimeNs t) {
  std::time_t secs = static_cast<std::time_t>(t / kNsPerSec);
  long ms = static_cast<long>((t % kNsPerSec) / kNsPerMs);
  if (ms < 0) {
    ms += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", tm, ms);
}

std::string format_duration(DurationNs d) {
  if (d < 0) return fmt::format("-{}", format_duration(-d));
  if (d < kNsPerSec) return fmt::format("{} ms", d / kNsPerMs);
  if (d < 60 * kNsPerSec) return fmt::format("{:.1f} s", static_cast<double>(d) / kNsPerSec);
  std::int64_t s = d / kNsPerSec;
  if (s < 3600) return fmt::format("{}m {:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d {:02d}h", s / 86400, (s % 86400) / 3600);
}

}  // namespace cardiac
