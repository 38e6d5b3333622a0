// SPDX-License-Identifier: Apache-2.0
// What every subcommand receives: its output streams and the clock, so tests can run a
// command in-process and compare what it printed.
#pragma once

#include <ostream>

#include "core/clock.h"

namespace cardiac::cli {

// Stable exit codes (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitFindings = 1,   // something is WARN or FAIL
  kExitUsage = 2,      // bad flags or configuration
  kExitCannotRun = 3,  // e.g. no NVIDIA driver / NVML library, no permission
};

struct Context {
  std::ostream& out;
  std::ostream& err;
  const Clock& clock;
  bool out_is_tty = false;
};

}  // namespace cardiac::cli
