// SPDX-License-Identifier: Apache-2.0
// `cardiac export slurm-gres`, kept apart from cmd_export.cpp's other exports.
#pragma once

#include "cli/commands.h"

namespace cardiac::cli {

// Adds the `slurm-gres` subcommand to `export` and returns a runner that runs it when it was
// chosen, else `others` (the runner of export's other subcommands).
Runner with_export_slurm_gres(CLI::App& sub, Runner others);

}  // namespace cardiac::cli
