// SPDX-License-Identifier: Apache-2.0
// Time source seam: production reads the system clocks, tests and the simulator a manual one.
#pragma once

#include <atomic>
#include <cstdint>

namespace cardiac {

// Nanoseconds since the UTC epoch (wall) or since an arbitrary start (monotonic).
using TimeNs = std::int64_t;
using DurationNs = std::int64_t;

constexpr DurationNs kNsPerUs = 1'000;
constexpr DurationNs kNsPerMs = 1'000'000;
constexpr DurationNs kNsPerSec = 1'000'000'000;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, UTC, for timestamps that are stored or shown.
  [[nodiscard]] virtual TimeNs now() const = 0;
  // Monotonic time for deadlines and durations; never goes backwards.
  [[nodiscard]] virtual TimeNs monotonic() const = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] TimeNs now() const override;
  [[nodiscard]] TimeNs monotonic() const override;
  // A process-wide instance; thread-safe.
  static const SystemClock& instance();
};

// A clock that only moves when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeNs start = 1'700'000'000LL * kNsPerSec) : now_(start) {}
  [[nodiscard]] TimeNs now() const override { return now_.load(); }
  [[nodiscard]] TimeNs monotonic() const override { return now_.load(); }
  void advance(DurationNs d) { now_ += d; }
  void set(TimeNs t) { now_ = t; }

 private:
  std::atomic<TimeNs> now_;
};

}  // namespace cardiac
