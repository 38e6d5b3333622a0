// SPDX-License-Identifier: Apache-2.0
// An incident as JSON, the one form `cardiac incident list --json` and the agent's control
// socket answer with (docs/incidents.md).
#pragma once

#include <nlohmann/json.hpp>

#include "store/incidents.h"

namespace cardiac::store {

// Times as RFC 3339 strings; what is not known (an empty serial, no fence) is null.
nlohmann::json incident_json(const Incident& i);

}  // namespace cardiac::store
