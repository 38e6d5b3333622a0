// SPDX-License-Identifier: Apache-2.0
// The [slurm] table of cardiac.toml: scontrol and the blast-radius limit of Slurm drains.
#pragma once

#include <string_view>

#include <toml++/toml.h>

#include "config/config.h"

namespace cardiac::config {

// Reads [slurm] into `s`. Errors name file:line:column: unknown keys, wrong types, a percentage
// outside 0..100, a zero window, an empty scontrol.
[[nodiscard]] Status read_slurm(const toml::table& t, std::string_view origin, SlurmSettings& s);

}  // namespace cardiac::config
