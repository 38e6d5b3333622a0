// SPDX-License-Identifier: Apache-2.0
// Test helpers: a loopback HTTP server on an ephemeral port, bounded waits, sample alerts.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "notify/notification.h"

namespace cardiac::notify::testing {

// Polls `pred` until it holds or `limit` passes; the limit is generous because it only bounds
// a failing test, a passing one returns as soon as the condition is observed.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// httplib::Server on 127.0.0.1, port chosen by the kernel. Handlers are registered by `setup`
// before the server thread starts, because httplib does not allow adding them concurrently.
class TestServer {
 public:
  explicit TestServer(const std::function<void(httplib::Server&)>& setup) {
    setup(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TestServer() {
    // stop() before the listen loop has started would be lost and join() would hang.
    eventually([this] { return server_.is_running(); }, std::chrono::seconds(5));
    server_.stop();
    thread_.join();
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

inline Notification sample(const std::string& alertname, const std::string& status = "firing") {
  Notification n;
  n.status = status;
  n.alertname = alertname;
  n.severity = "critical";
  n.labels = {{"gpu", "0"}, {"host", "node1"}};
  n.annotations = {{"summary", alertname + " on GPU 0"}};
  n.starts_at = 1'700'000'000LL * kNsPerSec;
  if (status == "resolved") n.ends_at = n.starts_at + 60 * kNsPerSec;
  n.generator_url = "http://node1:9400/alerts";
  n.fingerprint = "fp-" + alertname;
  n.value = 91.5;
  return n;
}

}  // namespace cardiac::notify::testing
