// SPDX-License-Identifier: Apache-2.0
// System clock implementation.
#include "core/clock.h"

#include <ctime>

namespace cardiac {
namespace {
TimeNs read_clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<TimeNs>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}
}  // namespace

TimeNs SystemClock::now() const {
  return read_clock(CLOCK_REALTIME);
}
TimeNs SystemClock::monotonic() const {
  return read_clock(CLOCK_MONOTONIC);
}

const SystemClock& SystemClock::instance() {
  static const SystemClock kClock;
  return kClock;
}

}  // namespace cardiac
