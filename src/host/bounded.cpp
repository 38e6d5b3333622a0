// SPDX-License-Identifier: Apache-2.0
// collect_host on a detached thread with a deadline.
#include "host/bounded.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/thread_name.h"

namespace cardiac::host {
namespace {

struct Pending {
  std::mutex mu;
  std::condition_variable done;
  std::optional<HostSnapshot> result;
};

}  // namespace

std::optional<HostSnapshot> collect_host_within(std::shared_ptr<const FileSystem> fs, TimeNs now,
                                                DurationNs deadline) {
  auto pending = std::make_shared<Pending>();
  std::thread([pending, fs = std::move(fs), now] {
    name_this_thread("cardiac-hostread");
    HostSnapshot snap = collect_host(*fs, now);
    std::lock_guard lock(pending->mu);
    pending->result = std::move(snap);
    pending->done.notify_all();
  }).detach();
  std::unique_lock lock(pending->mu);
  pending->done.wait_for(lock, std::chrono::nanoseconds(deadline),
                         [&] { return pending->result.has_value(); });
  if (!pending->result) return std::nullopt;
  return std::move(pending->result);
}

}  // namespace cardiac::host
