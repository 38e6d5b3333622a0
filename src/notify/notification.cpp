// SPDX-License-Identifier: Apache-2.0
// Builds the JSON bodies that notifiers send.
#include "notify/notification.h"

#include <fmt/format.h>

#include "core/time.h"

namespace cardiac::notify {
namespace {

// Receivers route and group on labels, so alertname and severity must be there; the struct
// fields win over a same-named label because they are what the rule engine decided.
nlohmann::json labels_of(const Notification& n) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : n.labels) labels[k] = v;
  labels["alertname"] = n.alertname;
  if (!n.severity.empty()) labels["severity"] = n.severity;
  return labels;
}

nlohmann::json annotations_of(const Notification& n) {
  nlohmann::json annotations = nlohmann::json::object();
  for (const auto& [k, v] : n.annotations) annotations[k] = v;
  return annotations;
}

}  // namespace

nlohmann::json to_json(const Notification& n) {
  nlohmann::json j = {
      {"status", n.status},
      {"labels", labels_of(n)},
      {"annotations", annotations_of(n)},
      {"startsAt", format_iso8601(n.starts_at)},
      {"generatorURL", n.generator_url},
      {"fingerprint", n.fingerprint},
  };
  if (n.ends_at) j["endsAt"] = format_iso8601(*n.ends_at);
  if (n.value) j["value"] = *n.value;
  return j;
}

nlohmann::json to_webhook_body(const std::vector<Notification>& batch) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const auto& n : batch) alerts.push_back(to_json(n));
  return {{"version", "1"}, {"alerts", std::move(alerts)}};
}

nlohmann::json to_alertmanager_v2(const std::vector<Notification>& batch) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : batch) {
    nlohmann::json a = {
        {"labels", labels_of(n)},
        {"annotations", annotations_of(n)},
        {"startsAt", format_iso8601(n.starts_at)},
        {"generatorURL", n.generator_url},
    };
    // Annotations are strings only; the reading is useful in the Alertmanager UI.
    if (n.value && !a["annotations"].contains("value"))
      a["annotations"]["value"] = fmt::format("{:g}", *n.value);
    // A firing alert must not carry endsAt: Alertmanager would resolve it at that time. A
    // resolved one needs an endsAt in the past; without one, its start is the safest past time.
    if (n.resolved()) a["endsAt"] = format_iso8601(n.ends_at.value_or(n.starts_at));
    out.push_back(std::move(a));
  }
  return out;
}

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cardiac::notify
