// SPDX-License-Identifier: Apache-2.0
#include "agent/parts.h"

#include <malloc.h>

#include <chrono>

namespace cardiac::agent {

void Inbox::add_kernel(std::vector<kmsg::KernelEvent> events) {
  if (events.empty()) return;
  std::lock_guard lock(mu_);
  for (auto& e : events) pending_.kernel.push_back(std::move(e));
}

void Inbox::add_nvml(telemetry::GpuEvent e) {
  std::lock_guard lock(mu_);
  pending_.nvml.push_back(std::move(e));
}

void Inbox::add_fence(queue::FenceNotice n) {
  std::lock_guard lock(mu_);
  pending_.fences.push_back(std::move(n));
}

Inbox::Batch Inbox::take() {
  std::lock_guard lock(mu_);
  return std::exchange(pending_, Batch{});
}

void KmsgStatus::set(bool up, std::string error) {
  up_ = up;
  std::lock_guard lock(mu_);
  error_ = up ? std::string() : std::move(error);
}

std::string KmsgStatus::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

AgentStore::AgentStore(store::Db db, const Clock& clock)
    : db_(std::move(db)), writer_(db_), alerts_(db_, clock) {}

bool Stopper::sleep_for(DurationNs d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(d), [&] { return stopping_; });
  return !stopping_;
}

void Stopper::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

bool Stopper::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

ProcessMemory read_process_memory() {
  const struct mallinfo2 m = mallinfo2();
  ProcessMemory p;
  if (m.uordblks + m.hblkhd > 0) {
    p.heap_in_use = static_cast<double>(m.uordblks + m.hblkhd);
    p.heap_free = static_cast<double>(m.fordblks);
  }
  p.sqlite = static_cast<double>(store::sqlite_memory_used());
  return p;
}

HeapTrimmer::HeapTrimmer(const Clock& clock, DurationNs period, std::function<void()> trim)
    : clock_(clock),
      period_(period),
      trim_(trim ? std::move(trim) : [] { malloc_trim(0); }),
      last_(clock.monotonic()) {}

void HeapTrimmer::maybe_trim() {
  const TimeNs now = clock_.monotonic();
  if (now - last_ < period_) return;
  last_ = now;
  trim_();
  ++trims_;
}

}  // namespace cardiac::agent
