// SPDX-License-Identifier: Apache-2.0
// Size formatting.
#include "core/units.h"

#include "core/format.h"

namespace cardiac {

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

}  // namespace cardiac
