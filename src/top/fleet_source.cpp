// SPDX-License-Identifier: Apache-2.0
#include "top/fleet_source.h"

#include <chrono>
#include <exception>

#include "fleet/read.h"

namespace cardiac::top {

FleetPoller::FleetPoller(fleet::Prometheus prometheus, std::string job, DurationNs interval,
                         const Clock& clock)
    : prometheus_(std::move(prometheus)),
      job_(std::move(job)),
      interval_(interval),
      clock_(clock),
      thread_([this] { run(); }) {}

FleetPoller::~FleetPoller() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::optional<FleetRead> FleetPoller::take() {
  std::lock_guard lock(mu_);
  std::optional<FleetRead> out = std::move(latest_);
  latest_.reset();
  return out;
}

void FleetPoller::run() {
  while (true) {
    FleetRead r{tl::unexpected(Error::internal("not read")), 0};
    try {
      r.view = fleet::read_fleet(prometheus_, job_);
    } catch (const std::exception& e) {
      // Shown on screen; an exception must not end this thread with the terminal still taken.
      r.view = tl::unexpected(Error::internal(std::string("reading the fleet: ") + e.what()));
    }
    r.at = clock_.now();
    std::unique_lock lock(mu_);
    latest_ = std::move(r);
    // The pause is real time whatever clock was given.
    if (cv_.wait_for(lock, std::chrono::nanoseconds(interval_), [&] { return stop_; })) return;
  }
}

}  // namespace cardiac::top
