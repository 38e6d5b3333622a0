// SPDX-License-Identifier: Apache-2.0
// Alert, AlertChange and Silence -> JSON.
#include "alerts/alert_json.h"

#include "core/time.h"

namespace cardiac::alerts {
namespace {

void put_time(nlohmann::json& j, const std::string& key, std::optional<TimeNs> t) {
  j[key + "_ns"] = t ? nlohmann::json(*t) : nlohmann::json(nullptr);
  j[key] = t ? nlohmann::json(format_iso8601(*t)) : nlohmann::json(nullptr);
}

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const Alert& a) {
  nlohmann::json j;
  j["id"] = a.id;
  j["fingerprint"] = a.fingerprint;
  j["rule"] = a.rule;
  j["labels"] = a.labels.map();
  j["state"] = rules::alert_state_name(a.state);
  j["severity"] = severity_name(a.severity);
  j["description"] = a.description;
  j["value"] = or_null(a.last_value);
  put_time(j, "started", a.started_ns);
  put_time(j, "fired", a.fired_ns);
  put_time(j, "resolved", a.resolved_ns);
  j["acked_by"] = or_null(a.acked_by);
  put_time(j, "acked", a.acked_ns);
  j["silenced"] = a.silenced;
  return j;
}

nlohmann::json to_json(const AlertChange& c) {
  nlohmann::json j;
  j["status"] = change_status_name(c.status);
  j["alert_id"] = c.alert_id;
  j["fingerprint"] = c.fingerprint;
  j["rule"] = c.rule;
  j["severity"] = severity_name(c.severity);
  j["labels"] = c.labels.map();
  j["description"] = c.description;
  j["value"] = c.value;
  put_time(j, "started", c.started_ns);
  put_time(j, "ended", c.ended_ns);
  j["silenced"] = c.silenced;
  return j;
}

nlohmann::json to_json(const Silence& s) {
  nlohmann::json j;
  j["id"] = s.id;
  j["matchers"] = matchers_text(s.matchers);
  nlohmann::json m = nlohmann::json::object();
  for (const Matcher& x : s.matchers) m[x.key] = x.value;
  j["matcher_map"] = m;
  put_time(j, "starts", s.starts_ns);
  put_time(j, "ends", s.ends_ns);
  j["created_by"] = s.created_by;
  j["comment"] = s.comment;
  put_time(j, "created", s.created_ns);
  return j;
}

}  // namespace cardiac::alerts
