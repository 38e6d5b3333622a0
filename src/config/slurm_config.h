// SPDX-License-Identifier: Apache-2.0
// The [slurm] and [fleet] tables of cardiac.toml: scontrol and the blast-radius limit of Slurm
// drains; the Prometheus the fleet view reads.
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "config/config.h"

namespace cardiac::config {

// Reads [slurm] into `s`. Errors name file:line:column: unknown keys, wrong types, a percentage
// outside 0..100, a zero window, an empty scontrol.
[[nodiscard]] Status read_slurm(const toml::table& t, std::string_view origin, SlurmSettings& s);

// Reads [fleet] into `f`. Errors name file:line:column: unknown keys, wrong types, an empty job,
// a zero timeout. The URL is checked where it is used (`cardiac fleet`).
[[nodiscard]] Status read_fleet(const toml::table& t, std::string_view origin, FleetSettings& f);

}  // namespace cardiac::config
