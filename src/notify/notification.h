// SPDX-License-Identifier: Apache-2.0
// One alert notification and its two wire formats: ours (webhook, exec) and Alertmanager v2.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"

namespace cardiac::notify {

struct Notification {
  std::string status;  // "firing" | "resolved"
  std::string alertname;
  std::string severity;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;  // description, summary
  TimeNs starts_at = 0;
  std::optional<TimeNs> ends_at;
  std::string generator_url;
  std::string fingerprint;
  std::optional<double> value;

  [[nodiscard]] bool resolved() const { return status == "resolved"; }
};

// Our format, shaped like one alert of Alertmanager's webhook payload so that receivers written
// for Alertmanager can read it: {status, labels (with alertname and severity), annotations,
// startsAt, endsAt (only when set), generatorURL, fingerprint, value (only when set)}.
// Times are ISO-8601 UTC with milliseconds, which is also valid RFC 3339.
nlohmann::json to_json(const Notification& n);

// Our webhook/exec body: {"version": "1", "alerts": [to_json(n)...]}.
nlohmann::json to_webhook_body(const std::vector<Notification>& batch);

// Body of Alertmanager API v2 POST /api/v2/alerts: an array of
// {labels, annotations, startsAt, endsAt (resolved only), generatorURL}.
nlohmann::json to_alertmanager_v2(const std::vector<Notification>& batch);

// Serialises without throwing: invalid UTF-8 in a label (from a device name, say) is replaced
// rather than failing the whole delivery.
std::string dump_json(const nlohmann::json& j);

}  // namespace cardiac::notify
