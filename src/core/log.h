// SPDX-License-Identifier: Apache-2.0
// Logging through spdlog; diagnostics go to stderr so stdout stays machine-readable.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace cardiac::log {

// Sets the global level from a name (trace, debug, info, warn, error, off); unknown → warn.
void set_level(std::string_view name);

using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;

}  // namespace cardiac::log
