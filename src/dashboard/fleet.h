// SPDX-License-Identifier: Apache-2.0
// The dashboard's Fleet tab: GET /api/v1/fleet answers the fleet view (`cardiac.fleet/v1`,
// docs/fleet.md) as the agent read it from the Prometheus of its [fleet] table, with when.
#pragma once

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "fleet/view.h"

namespace cardiac::dashboard {

// fleet::to_json(view) with "read_at" (RFC 3339 UTC): an answer may come from the agent's
// cache of a few seconds, and the page says how old what it shows is.
nlohmann::json fleet_answer(const fleet::FleetView& view, TimeNs read_at);

}  // namespace cardiac::dashboard
