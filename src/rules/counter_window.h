// SPDX-License-Identifier: Apache-2.0
// A counter's samples within a rate or increase rule's window, kept as runs of equal values.
// Counters change rarely (an Xid, an ECC error), and an hour of one sample a second per series
// was 57 kB each and an hour-long rise of the agent's memory; a run of equal values adds
// nothing to an increase, so the runs give the same answers as every sample.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>

#include "core/clock.h"

namespace cardiac::rules {

class CounterWindow {
 public:
  // Samples come in time order.
  void push(TimeNs t, double value);
  // Forgets the samples before `cutoff` (the window's start).
  void prune(TimeNs cutoff);
  [[nodiscard]] bool empty() const { return runs_.empty(); }
  // At least two samples in the window: an increase can be told.
  [[nodiscard]] bool has_two() const;
  // The sum of the rises between consecutive samples, a fall counted as a reset to 0.
  [[nodiscard]] double increase() const;
  // The same over the last two samples only.
  [[nodiscard]] double last_increase() const;
  [[nodiscard]] std::size_t runs() const { return runs_.size(); }

 private:
  struct Run {
    double value = 0;
    TimeNs last = 0;               // its latest sample
    std::optional<TimeNs> before;  // the sample before that one in the run, if any
  };
  static double rise(double from, double to) { return to - from >= 0 ? to - from : to; }
  std::deque<Run> runs_;
};

}  // namespace cardiac::rules
