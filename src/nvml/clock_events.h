// SPDX-License-Identifier: Apache-2.0
// Decoding of the clock event (throttle) reason mask into names people can act on.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cardiac::nvml {

struct ClockEventReason {
  std::uint64_t bit;
  std::string_view name;   // stable key: "hw_thermal_slowdown"
  std::string_view text;   // for people: "HW thermal slowdown"
  std::string_view brief;  // for a narrow table column: "hw_thermal"
  bool performance_loss;   // false for idle and settings that are not a fault
};

// Every known reason, lowest bit first.
const std::vector<ClockEventReason>& clock_event_reasons();
// The known reasons set in `mask`, lowest bit first. Bits this build does not know (a newer
// driver) are not in the list; unknown_clock_event_bits() returns them.
std::vector<ClockEventReason> decode_clock_event_reasons(std::uint64_t mask);
std::uint64_t unknown_clock_event_bits(std::uint64_t mask);

}  // namespace cardiac::nvml
