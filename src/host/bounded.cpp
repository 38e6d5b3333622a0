// SPDX-License-Identifier: Apache-2.0
// collect_host on a kept, detached thread, with a deadline per read.
#include "host/bounded.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/thread_name.h"

namespace cardiac::host {

struct HostReader::Shared {
  explicit Shared(std::shared_ptr<const FileSystem> f) : fs(std::move(f)) {}

  // The thread's loop: one read per request, until the reader is gone.
  void run() {
    name_this_thread("cardiac-hostrd");
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || asked > answered_no; });
      if (stop) return;
      const std::uint64_t no = asked;
      const TimeNs at = asked_at;
      ++started;
      lock.unlock();
      HostSnapshot snap = collect_host(*fs, at);
      lock.lock();
      result = std::move(snap);
      answered_no = no;
      cv.notify_all();
    }
  }

  const std::shared_ptr<const FileSystem> fs;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool running = false;           // the thread was started
  std::uint64_t asked = 0;        // the number of the latest request
  TimeNs asked_at = 0;            // its `now`
  std::uint64_t answered_no = 0;  // the request `result` answers
  std::optional<HostSnapshot> result;
  std::uint64_t started = 0;
};

HostReader::HostReader(std::shared_ptr<const FileSystem> fs)
    : s_(std::make_shared<Shared>(std::move(fs))) {}

HostReader::~HostReader() {
  std::lock_guard lock(s_->mu);
  s_->stop = true;
  s_->cv.notify_all();
}

std::optional<HostSnapshot> HostReader::collect(TimeNs now, DurationNs deadline) {
  Shared& s = *s_;
  std::unique_lock lock(s.mu);
  // The last read has not come back: the file system it waits on still hangs.
  if (s.asked > s.answered_no) return std::nullopt;
  s.result.reset();  // a read that came back after its deadline
  const std::uint64_t no = ++s.asked;
  s.asked_at = now;
  if (!s.running) {
    s.running = true;
    std::thread([shared = s_] { shared->run(); }).detach();
  }
  s.cv.notify_all();
  s.cv.wait_for(lock, std::chrono::nanoseconds(deadline), [&] { return s.answered_no == no; });
  if (s.answered_no != no || !s.result) return std::nullopt;
  std::optional<HostSnapshot> out = std::move(s.result);
  s.result.reset();
  return out;
}

std::uint64_t HostReader::reads() const {
  std::lock_guard lock(s_->mu);
  return s_->started;
}

std::optional<HostSnapshot> collect_host_within(std::shared_ptr<const FileSystem> fs, TimeNs now,
                                                DurationNs deadline) {
  HostReader reader(std::move(fs));
  return reader.collect(now, deadline);
}

}  // namespace cardiac::host
