// SPDX-License-Identifier: Apache-2.0
// Dispatcher: queues, worker loop with backoff, bounded shutdown.
#include "notify/dispatcher.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "core/log.h"
#include "core/thread_name.h"

namespace cardiac::notify {

using Clock = std::chrono::steady_clock;

struct Dispatcher::Worker {
  std::unique_ptr<Notifier> notifier;
  mutable std::mutex mu;
  std::condition_variable wake;  // new work or stop; also cuts a backoff wait short
  std::condition_variable finished;
  std::deque<Notification> queue;
  bool stopping = false;
  bool done = false;
  bool overflowing = false;  // so that a sustained overflow logs once, not per drop
  Clock::time_point stop_deadline{};
  NotifierStats stats;
};

Dispatcher::Dispatcher(std::vector<std::unique_ptr<Notifier>> notifiers, DispatcherOptions options)
    : options_(options) {
  options_.queue_capacity = std::max<std::size_t>(options_.queue_capacity, 1);
  options_.max_batch = std::max<std::size_t>(options_.max_batch, 1);
  options_.max_attempts = std::max(options_.max_attempts, 1);
  for (auto& n : notifiers) {
    if (!n) continue;
    auto w = std::make_shared<Worker>();
    w->stats.name = n->name();
    w->notifier = std::move(n);
    workers_.push_back(w);
    threads_.emplace_back([w, opts = options_] {
      name_this_thread("cardiac-notify");
      run(w, opts);
    });
  }
}

Dispatcher::~Dispatcher() {
  stop();
}

void Dispatcher::submit(const std::vector<Notification>& batch) {
  if (batch.empty()) return;
  for (const auto& w : workers_) {
    {
      std::lock_guard lock(w->mu);
      if (w->stopping) {
        w->stats.dropped += batch.size();
        continue;
      }
      for (const auto& n : batch) {
        if (w->queue.size() >= options_.queue_capacity) {
          w->queue.pop_front();
          ++w->stats.dropped;
          if (!w->overflowing)
            log::warn("notify {}: queue full ({}), dropping oldest notifications", w->stats.name,
                      options_.queue_capacity);
          w->overflowing = true;
        }
        w->queue.push_back(n);
      }
    }
    w->wake.notify_one();
  }
}

void Dispatcher::run(const std::shared_ptr<Worker>& w, const DispatcherOptions& options) {
  // Receivers may close connections or pipes under us; SIGPIPE must not end the agent.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

  std::unique_lock lock(w->mu);
  while (true) {
    w->wake.wait(lock, [&] { return w->stopping || !w->queue.empty(); });
    if (w->queue.empty() || (w->stopping && Clock::now() >= w->stop_deadline)) break;
    std::size_t take = std::min(options.max_batch, w->queue.size());
    std::vector<Notification> batch(std::make_move_iterator(w->queue.begin()),
                                    std::make_move_iterator(w->queue.begin() + take));
    w->queue.erase(w->queue.begin(), w->queue.begin() + take);
    w->overflowing = false;
    w->stats.in_flight = batch.size();
    auto delay = options.retry_initial;
    for (int attempt = 1;; ++attempt) {
      lock.unlock();
      Status status = w->notifier->deliver(batch);
      lock.lock();
      if (status) {
        w->stats.delivered += batch.size();
        if (attempt > 1)
          log::info("notify {}: delivered after {} attempts", w->stats.name, attempt);
        break;
      }
      ++w->stats.failed_attempts;
      w->stats.last_error = status.error().what();
      bool last = attempt >= options.max_attempts || w->stopping;
      if (attempt == 1 || last)
        log::warn("notify {}: delivery failed{}: {}", w->stats.name,
                  last ? ", giving up on this batch" : ", will retry", w->stats.last_error);
      if (!last) w->wake.wait_for(lock, delay, [&] { return w->stopping; });
      if (last || w->stopping) {
        w->stats.given_up += batch.size();
        break;
      }
      delay = std::min(delay * 2, options.retry_max);
    }
    w->stats.in_flight = 0;
  }
  w->stats.given_up += w->queue.size();
  w->queue.clear();
  w->done = true;
  w->finished.notify_all();
}

bool Dispatcher::stop(std::chrono::milliseconds grace) {
  if (stopped_) return all_finished_;
  stopped_ = true;
  const auto deadline = Clock::now() + grace;
  for (const auto& w : workers_) {
    {
      std::lock_guard lock(w->mu);
      w->stopping = true;
      w->stop_deadline = deadline;
    }
    w->wake.notify_all();
  }
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const auto& w = workers_[i];
    std::unique_lock lock(w->mu);
    bool done = w->finished.wait_until(lock, deadline, [&] { return w->done; });
    lock.unlock();
    if (done) {
      threads_[i].join();
    } else {
      // Joining could wait forever on a hung receiver; the worker owns its state through a
      // shared_ptr, so letting it go is safe.
      log::warn("notify {}: delivery still in progress at shutdown, abandoned", w->stats.name);
      threads_[i].detach();
      all_finished_ = false;
    }
  }
  threads_.clear();
  return all_finished_;
}

std::vector<NotifierStats> Dispatcher::stats() const {
  std::vector<NotifierStats> out;
  out.reserve(workers_.size());
  for (const auto& w : workers_) {
    std::lock_guard lock(w->mu);
    out.push_back(w->stats);
    out.back().queued = w->queue.size();
  }
  return out;
}

}  // namespace cardiac::notify
