// SPDX-License-Identifier: Apache-2.0
// From configuration to notifiers, and from alert changes to notifications.
#include "agent/notifiers.h"
#include "core/format.h"

namespace cardiac::agent {

Result<std::unique_ptr<notify::Dispatcher>> make_dispatcher(const config::Config& c,
                                                            bool alertmanager) {
  std::vector<std::unique_ptr<notify::Notifier>> notifiers;
  for (const auto& n : c.notifiers) {
    if ((n.type == "alertmanager") != alertmanager) continue;
    if (n.type == "alertmanager") {
      auto am = notify::AlertmanagerNotifier::create(n.url, n.timeout);
      if (!am) return fail(am.error().with_context(n.where));
      notifiers.push_back(std::move(*am));
    } else if (n.type == "webhook") {
      notify::WebhookNotifier::Headers headers(n.headers.begin(), n.headers.end());
      auto wh = notify::WebhookNotifier::create(n.url, headers, n.timeout);
      if (!wh) return fail(wh.error().with_context(n.where));
      notifiers.push_back(std::move(*wh));
    } else if (n.type == "exec") {
      auto ex = notify::ExecNotifier::create(n.argv, n.timeout);
      if (!ex) return fail(ex.error().with_context(n.where));
      notifiers.push_back(std::move(*ex));
    } else {
      notifiers.push_back(std::make_unique<notify::LogNotifier>());
    }
  }
  if (alertmanager && notifiers.empty()) return std::unique_ptr<notify::Dispatcher>();
  // Without any configured notifier alerts still reach the log.
  if (!alertmanager && c.notifiers.empty()) {
    notifiers.push_back(std::make_unique<notify::LogNotifier>());
  }
  if (notifiers.empty()) return std::unique_ptr<notify::Dispatcher>();
  return std::make_unique<notify::Dispatcher>(std::move(notifiers), notify::DispatcherOptions{});
}

std::vector<notify::Notification> to_notifications(const std::vector<alerts::AlertChange>& changes,
                                                   const std::string& hostname) {
  std::vector<notify::Notification> out;
  for (const auto& ch : changes) {
    if (ch.silenced) continue;
    notify::Notification n;
    n.status = std::string(alerts::change_status_name(ch.status));
    n.alertname = ch.rule;
    n.severity = std::string(severity_name(ch.severity));
    for (const auto& [k, v] : ch.labels) n.labels[k] = v;
    n.labels["hostname"] = hostname;
    n.annotations["description"] = ch.description;
    n.annotations["summary"] = fmt::format("{} on {}", ch.rule, hostname);
    n.starts_at = ch.started_ns;
    n.ends_at = ch.ended_ns;
    n.fingerprint = ch.fingerprint;
    n.value = ch.value;
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<notify::Notification> firing_notifications(const std::vector<alerts::Alert>& open,
                                                       const std::string& hostname) {
  std::vector<alerts::AlertChange> changes;
  for (const auto& a : open) {
    if (a.state != rules::AlertState::kFiring || a.silenced) continue;
    alerts::AlertChange ch;
    ch.status = alerts::ChangeStatus::kFiring;
    ch.alert_id = a.id;
    ch.fingerprint = a.fingerprint;
    ch.rule = a.rule;
    ch.severity = a.severity;
    ch.labels = a.labels;
    ch.description = a.description;
    ch.value = a.last_value.value_or(0);
    ch.started_ns = a.fired_ns.value_or(a.started_ns);
    changes.push_back(std::move(ch));
  }
  return to_notifications(changes, hostname);
}

}  // namespace cardiac::agent
