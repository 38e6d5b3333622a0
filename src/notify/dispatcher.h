// SPDX-License-Identifier: Apache-2.0
// Fans notifications out to notifiers: per-notifier bounded queues, worker threads, retries.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "notify/notification.h"
#include "notify/notifier.h"

namespace cardiac::notify {

struct DispatcherOptions {
  std::size_t queue_capacity = 1000;  // notifications waiting per notifier (at least 1)
  std::size_t max_batch = 100;        // notifications per deliver() call (at least 1)
  std::chrono::milliseconds retry_initial{1000};
  std::chrono::milliseconds retry_max{5 * 60 * 1000};
  int max_attempts = 10;                       // per batch, the first try included
  std::chrono::milliseconds stop_grace{5000};  // what stop() and the destructor wait at most
};

// All counts are notifications, not batches, except failed_attempts (deliver() calls).
struct NotifierStats {
  std::string name;
  std::uint64_t delivered = 0;
  std::uint64_t failed_attempts = 0;
  std::uint64_t dropped = 0;   // pushed out of a full queue (oldest first), or sent after stop
  std::uint64_t given_up = 0;  // out of attempts, or still undelivered when stop's grace ran out
  std::size_t queued = 0;      // waiting, not counting the batch in flight
  std::size_t in_flight = 0;   // the batch being delivered or waiting to be retried
  std::string last_error;      // of the most recent failed attempt; kept after later successes
};

// One worker thread per notifier delivers its queue in order, one batch at a time, retrying a
// failed batch with exponential backoff (retry_initial doubling up to retry_max) until
// max_attempts. A slow or dead receiver only backs up its own queue: submit() never blocks and
// other notifiers carry on. Thread-safe.
class Dispatcher {
 public:
  explicit Dispatcher(std::vector<std::unique_ptr<Notifier>> notifiers,
                      DispatcherOptions options = {});
  ~Dispatcher();  // stop() if not done yet
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Queues a copy of `batch` for every notifier. When a queue is full its oldest notifications
  // are dropped and counted: the newest state of an alert matters more than an old one.
  void submit(const std::vector<Notification>& batch);

  // Stops accepting, lets workers deliver what is queued until `grace` has passed (a failure
  // now is not retried), and joins them. A worker still inside deliver() at the deadline (a
  // hung receiver) is detached and left to finish alone. Returns true if all had finished.
  // Calling it again returns at once.
  bool stop(std::chrono::milliseconds grace);
  bool stop() { return stop(options_.stop_grace); }

  [[nodiscard]] std::vector<NotifierStats> stats() const;

 private:
  struct Worker;
  static void run(const std::shared_ptr<Worker>& w, const DispatcherOptions& options);

  DispatcherOptions options_;
  // Shared with the thread so that a detached worker never touches freed memory.
  std::vector<std::shared_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
  bool all_finished_ = true;
};

}  // namespace cardiac::notify
