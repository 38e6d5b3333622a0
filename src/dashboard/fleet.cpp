// SPDX-License-Identifier: Apache-2.0
#include "dashboard/fleet.h"

#include "core/time.h"

namespace cardiac::dashboard {

nlohmann::json fleet_answer(const fleet::FleetView& view, TimeNs read_at) {
  nlohmann::json j = fleet::to_json(view);
  j["read_at"] = format_iso8601(read_at);
  return j;
}

}  // namespace cardiac::dashboard
