// SPDX-License-Identifier: Apache-2.0
// Pressure stall information (PSI) from /proc/pressure/{cpu,memory,io}.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

// One "some"/"full" line: percent of wall time stalled, averaged over 10 s, 60 s and 300 s,
// and the cumulative stall time in microseconds.
struct PressureLine {
  double avg10 = 0;
  double avg60 = 0;
  double avg300 = 0;
  std::uint64_t total_us = 0;
};

struct PressureStat {
  std::optional<PressureLine> some;
  std::optional<PressureLine> full;  // absent in /proc/pressure/cpu before 5.13
};

// Each resource is absent when its file is missing (kernels before 4.20, or psi=0).
struct Pressure {
  std::optional<PressureStat> cpu;
  std::optional<PressureStat> memory;
  std::optional<PressureStat> io;
};

// Parses one /proc/pressure/* file. Each line must be "some|full avg10=.. avg60=..
// avg300=.. total=.."; empty text or a malformed line is a parse error naming the line.
[[nodiscard]] Result<PressureStat> parse_pressure(std::string_view text);

// Reads the three files through `fs`. A missing file leaves its resource absent; the first
// unreadable or malformed file is returned as the error.
[[nodiscard]] Result<Pressure> collect_pressure(const FileSystem& fs);

}  // namespace cardiac::host
