// SPDX-License-Identifier: Apache-2.0
// Where `cardiac top --fleet` gets its view: fleet::read_fleet every interval on a thread of
// its own, so a slow or unreachable Prometheus never freezes the keys; the screen takes the
// newest answer (a view, or the error that says why there is none).
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/result.h"
#include "fleet/prometheus.h"
#include "fleet/view.h"

namespace cardiac::top {

struct FleetRead {
  Result<fleet::FleetView> view;
  TimeNs at = 0;  // when the read finished
};

class FleetPoller {
 public:
  FleetPoller(fleet::Prometheus prometheus, std::string job, DurationNs interval,
              const Clock& clock);
  ~FleetPoller();
  FleetPoller(const FleetPoller&) = delete;
  FleetPoller& operator=(const FleetPoller&) = delete;
  // The newest read since the last call, if any.
  std::optional<FleetRead> take();

 private:
  void run();
  fleet::Prometheus prometheus_;
  std::string job_;
  DurationNs interval_;
  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<FleetRead> latest_;
  std::thread thread_;
};

}  // namespace cardiac::top
