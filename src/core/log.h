// SPDX-License-Identifier: Apache-2.0
// Logging through spdlog; diagnostics go to stderr so stdout stays machine-readable.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace cardiac::log {

// Sets the global level from a name (trace, debug, info, warn, error, off); unknown → warn.
void set_level(std::string_view name);

// Under systemd with standard error connected to the journal ($JOURNAL_STREAM names its
// device:inode), lines carry no timestamp (journald stamps each) and start with a syslog
// priority prefix ("<4>warning …") that journald turns into the entry's priority. Returns
// whether it switched. Call after set_level.
bool use_journal_format_if_connected();

using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;

}  // namespace cardiac::log
