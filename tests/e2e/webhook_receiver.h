// SPDX-License-Identifier: Apache-2.0
// A webhook receiver on loopback for the tests that follow an alert to a person: it records the
// bodies POSTed to /hook, and serves whatever else a test registers on it (an inference
// engine's /metrics, say).
#pragma once

#include <httplib.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace cardiac::e2e {

class WebhookReceiver {
 public:
  WebhookReceiver() {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      bodies_.push_back(req.body);
      res.status = 200;
    });
  }
  ~WebhookReceiver() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  // Register other routes before start().
  httplib::Server& server() { return server_; }
  // Binds a free loopback port and serves; returns once the accept loop runs (a stop() before
  // it would be lost and the destructor's join hang).
  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // A [[notifier]] table that sends alerts here.
  [[nodiscard]] std::string notifier() const {
    return "[[notifier]]\ntype = \"webhook\"\nurl = \"" + url("/hook") + "\"\n";
  }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  // The alerts received with this name and status ("firing", "resolved").
  std::vector<nlohmann::json> received(const std::string& alertname, const std::string& status) {
    std::vector<nlohmann::json> out;
    for (const auto& b : bodies()) {
      auto j = nlohmann::json::parse(b, nullptr, false);
      if (j.is_discarded() || !j.contains("alerts")) continue;
      for (const auto& a : j["alerts"]) {
        if (a["labels"].value("alertname", "") == alertname && a.value("status", "") == status) {
          out.push_back(a);
        }
      }
    }
    return out;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

}  // namespace cardiac::e2e
