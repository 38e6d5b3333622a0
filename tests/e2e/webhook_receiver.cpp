// SPDX-License-Identifier: Apache-2.0
#include "tests/e2e/webhook_receiver.h"

#include <httplib.h>

namespace cardiac::e2e {

WebhookReceiver::WebhookReceiver() : server_(std::make_unique<httplib::Server>()) {
  server_->Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    bodies_.push_back(req.body);
    res.status = 200;
  });
}

WebhookReceiver::~WebhookReceiver() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

void WebhookReceiver::start() {
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::yield();
}

std::vector<std::string> WebhookReceiver::bodies() {
  std::lock_guard lock(mu_);
  return bodies_;
}

std::vector<nlohmann::json> WebhookReceiver::received(const std::string& alertname,
                                                      const std::string& status) {
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

}  // namespace cardiac::e2e
