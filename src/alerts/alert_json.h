// SPDX-License-Identifier: Apache-2.0
// JSON shapes of alerts, alert changes and silences for the agent API and the CLI.
#pragma once

#include <nlohmann/json.hpp>

#include "alerts/alert_book.h"
#include "alerts/silence.h"

namespace cardiac::alerts {

// Times appear twice: *_ns integers for programs and ISO 8601 strings for people; absent
// values are null rather than missing so that consumers see one fixed set of keys.
nlohmann::json to_json(const Alert& alert);
nlohmann::json to_json(const AlertChange& change);
nlohmann::json to_json(const Silence& silence);

}  // namespace cardiac::alerts
