// SPDX-License-Identifier: Apache-2.0
// Decoding of the clock event (throttle) reason mask into names people can act on.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cardiac::nvml {

struct ClockEventReason {
  std::uint64_t bit;
  std::string_view name;  // stable key: "hw_thermal_slowdown"
  std::string_view text;  // for people: "HW thermal slowdown"
  bool performance_loss;  // false for idle and settings that are not a fault
};

// Every known reason, lowest bit first.
const std::vector<ClockEventReason>& clock_event_reasons();
// The reasons set in `mask`, lowest bit first; unknown bits become "unknown_0x…" entries
// are not produced: callers see them through unknown_clock_event_bits().
std::vector<ClockEventReason> decode_clock_event_reasons(std::uint64_t mask);
std::uint64_t unknown_clock_event_bits(std::uint64_t mask);

}  // namespace cardiac::nvml
