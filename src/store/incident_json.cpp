// SPDX-License-Identifier: Apache-2.0
#include "store/incident_json.h"

#include "core/time.h"

namespace cardiac::store {
namespace {

nlohmann::json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

nlohmann::json time_or_null(const std::optional<TimeNs>& t) {
  return t ? nlohmann::json(format_iso8601(*t)) : nlohmann::json();
}

}  // namespace

nlohmann::json incident_json(const Incident& i) {
  nlohmann::json remediations = nlohmann::json::array();
  for (const auto& r : i.remediations) {
    remediations.push_back({{"action", remediation_action_name(r.action)},
                            {"note", text_or_null(r.note)},
                            {"who", r.who},
                            {"at", format_iso8601(r.at_ns)}});
  }
  return {{"id", i.id},
          {"gpu", i.gpu},
          {"uuid", text_or_null(i.uuid)},
          {"serial", text_or_null(i.serial)},
          {"pci_bus_id", text_or_null(i.pci_bus_id)},
          {"hostname", text_or_null(i.hostname)},
          {"kind", nvml::device_health_name(i.kind)},
          {"cause", text_or_null(i.cause)},
          {"started", format_iso8601(i.started_ns)},
          {"detected", time_or_null(i.detected_ns)},
          {"fenced", time_or_null(i.fenced_ns)},
          {"remediations", remediations},
          {"returned", time_or_null(i.ended_ns)},
          {"returned_by", text_or_null(i.returned_by)},
          {"evidence", text_or_null(i.evidence)}};
}

}  // namespace cardiac::store
