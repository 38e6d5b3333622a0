// SPDX-License-Identifier: Apache-2.0
// Notifier interface and the built-in receivers: Alertmanager, webhook, exec, log.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "notify/notification.h"

namespace cardiac::notify {

// Delivers batches to one receiver. deliver() may block up to the notifier's own timeout; the
// Dispatcher runs each notifier on its own thread so that this never delays anything else.
// One notifier is used by one thread at a time.
class Notifier {
 public:
  virtual ~Notifier();
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual Status deliver(const std::vector<Notification>& batch) = 0;
};

// "http://host:port/path" split into its parts; port defaults to 80/443, path to "/".
struct HttpUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // as written, brackets kept for IPv6 literals
  int port = 0;
  std::string path;
  [[nodiscard]] std::string origin() const;  // "scheme://host:port"
};

// Fails (kInvalidArgument) on anything but http/https with a host, and (kUnsupported) on https
// when cpp-httplib was built without OpenSSL: better to refuse at startup than at first alert.
[[nodiscard]] Result<HttpUrl> parse_http_url(std::string_view url);

// POSTs to {base}/api/v2/alerts. Success is HTTP 200, as Alertmanager answers.
class AlertmanagerNotifier final : public Notifier {
 public:
  // base_url like "http://127.0.0.1:9093" (a path prefix such as "/alertmanager" is kept).
  [[nodiscard]] static Result<std::unique_ptr<AlertmanagerNotifier>> create(
      std::string_view base_url, DurationNs timeout = 10 * kNsPerSec);
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] Status deliver(const std::vector<Notification>& batch) override;

 private:
  AlertmanagerNotifier(HttpUrl url, DurationNs timeout) : url_(std::move(url)), timeout_(timeout) {}
  HttpUrl url_;
  DurationNs timeout_;
};

// POSTs {"version":"1","alerts":[...]} (see to_webhook_body) to a URL. Success is any 2xx.
class WebhookNotifier final : public Notifier {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  [[nodiscard]] static Result<std::unique_ptr<WebhookNotifier>> create(
      std::string_view url, Headers headers = {}, DurationNs timeout = 10 * kNsPerSec);
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] Status deliver(const std::vector<Notification>& batch) override;

 private:
  WebhookNotifier(HttpUrl url, Headers headers, DurationNs timeout)
      : url_(std::move(url)), headers_(std::move(headers)), timeout_(timeout) {}
  HttpUrl url_;
  Headers headers_;
  DurationNs timeout_;
};

// Runs argv directly (never through a shell, so alert text cannot inject commands) with the
// webhook body on stdin; stdout goes to /dev/null, stderr is inherited (the agent's log). The
// child is killed when it outlives `timeout`. Success is exit status 0.
class ExecNotifier final : public Notifier {
 public:
  // argv[0] must be an absolute path: there is no PATH search, so what runs is what was written.
  [[nodiscard]] static Result<std::unique_ptr<ExecNotifier>> create(std::vector<std::string> argv,
                                                                    DurationNs timeout = 30 *
                                                                                         kNsPerSec);
  [[nodiscard]] std::string name() const override;
  [[nodiscard]] Status deliver(const std::vector<Notification>& batch) override;

 private:
  ExecNotifier(std::vector<std::string> argv, DurationNs timeout)
      : argv_(std::move(argv)), timeout_(timeout) {}
  std::vector<std::string> argv_;
  DurationNs timeout_;
};

// One log line per notification (warn when firing, info when resolved); never fails.
class LogNotifier final : public Notifier {
 public:
  [[nodiscard]] std::string name() const override { return "log"; }
  [[nodiscard]] Status deliver(const std::vector<Notification>& batch) override;
};

}  // namespace cardiac::notify
