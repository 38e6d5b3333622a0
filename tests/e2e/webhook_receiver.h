// SPDX-License-Identifier: Apache-2.0
// A webhook receiver on loopback for the tests that follow an alert to a person: it records the
// bodies POSTed to /hook, and serves whatever else a test registers on it (an inference
// engine's /metrics, say). Defined in webhook_receiver.cpp (library cardiac_e2e_support): a
// test that registers routes includes httplib.h itself, the others need not parse it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}  // namespace httplib

namespace cardiac::e2e {

class WebhookReceiver {
 public:
  WebhookReceiver();
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  // Register other routes before start().
  httplib::Server& server() { return *server_; }
  // Binds a free loopback port and serves; returns once the accept loop runs (a stop() before
  // it would be lost and the destructor's join hang).
  void start();

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // A [[notifier]] table that sends alerts here.
  [[nodiscard]] std::string notifier() const {
    return "[[notifier]]\ntype = \"webhook\"\nurl = \"" + url("/hook") + "\"\n";
  }
  std::vector<std::string> bodies();
  // The alerts received with this name and status ("firing", "resolved").
  std::vector<nlohmann::json> received(const std::string& alertname, const std::string& status);

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

}  // namespace cardiac::e2e
