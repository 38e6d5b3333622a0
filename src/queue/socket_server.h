// SPDX-License-Identifier: Apache-2.0
// The agent's end of the queue socket: a Unix stream socket (mode 0666: anyone may connect,
// the peer credentials decide what they may do), one request line and one answer line per
// connection, each connection on a short-lived thread of its own (at most 32 at once).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "queue/auth.h"

namespace cardiac::queue {

// Answers one request. Called concurrently from connection threads; must be thread-safe and
// must not throw (an exception becomes an internal-error answer anyway).
using RequestHandler = std::function<nlohmann::json(const Principal&, const nlohmann::json&)>;

class SocketServer {
 public:
  SocketServer(std::string path, RequestHandler handler);
  ~SocketServer();
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Binds and starts accepting. A socket file left by a dead agent is replaced; one that still
  // answers means another agent serves this state directory, which is an error.
  [[nodiscard]] Status start();
  // Stops accepting, ends open connections and waits for their threads. Idempotent.
  void stop();

 private:
  void accept_loop();
  void serve(int fd);

  std::string path_;
  RequestHandler handler_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> open_fds_;
  int active_ = 0;
  bool stopping_ = false;
};

}  // namespace cardiac::queue
