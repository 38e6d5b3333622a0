// SPDX-License-Identifier: Apache-2.0
// JSON form of a host snapshot (and optionally its rates) for `--json` and the HTTP API.
#pragma once

#include <nlohmann/json.hpp>

#include "host/host.h"

namespace cardiac::host {

// Builds the object documented in src/host/README.md: snake_case keys, absent readings
// omitted (never 0), byte counts as integers, percentages rounded to 0.1. `rates` may be
// null (a first sample); when given, its values are merged into the cpu, disks and nics
// entries they belong to.
[[nodiscard]] nlohmann::json to_json(const HostSnapshot& snapshot, const HostRates* rates);

}  // namespace cardiac::host
