// SPDX-License-Identifier: Apache-2.0
// Keeps SIGPIPE from a closed socket or pipe from killing the process during one delivery.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace cardiac::notify::detail {

// cpp-httplib sends without MSG_NOSIGNAL and a hook may exit before reading its stdin; either
// raises SIGPIPE, whose default action ends the whole agent. Blocking it on this thread turns it
// into EPIPE; a SIGPIPE that became pending during the scope is consumed before unblocking.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
};

}  // namespace cardiac::notify::detail
