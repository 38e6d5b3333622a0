// SPDX-License-Identifier: Apache-2.0
#include "rules/counter_window.h"

namespace cardiac::rules {

void CounterWindow::push(TimeNs t, double value) {
  // NaN never equals itself: such a sample starts a run of its own, as it was its own sample.
  if (!runs_.empty() && runs_.back().value == value) {
    runs_.back().before = runs_.back().last;
    runs_.back().last = t;
    return;
  }
  runs_.push_back(Run{.value = value, .last = t, .before = std::nullopt});
}

void CounterWindow::prune(TimeNs cutoff) {
  while (!runs_.empty() && runs_.front().last < cutoff) runs_.pop_front();
  // A run reaching into the window keeps its value; what it held before the cutoff is gone.
  if (!runs_.empty() && runs_.front().before && *runs_.front().before < cutoff) {
    runs_.front().before.reset();
  }
}

bool CounterWindow::has_two() const {
  return runs_.size() >= 2 || (runs_.size() == 1 && runs_.front().before.has_value());
}

double CounterWindow::increase() const {
  double inc = 0;
  for (std::size_t i = 1; i < runs_.size(); ++i) inc += rise(runs_[i - 1].value, runs_[i].value);
  return inc;
}

double CounterWindow::last_increase() const {
  if (runs_.empty() || runs_.back().before) return 0;  // the last two samples are equal
  if (runs_.size() < 2) return 0;
  return rise(runs_[runs_.size() - 2].value, runs_.back().value);
}

}  // namespace cardiac::rules
