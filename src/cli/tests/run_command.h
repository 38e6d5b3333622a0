// SPDX-License-Identifier: Apache-2.0
// Runs one subcommand in-process as main() does: parse its flags, then run it with a Context
// whose output is captured and whose time comes from the test's clock.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/context.h"

namespace cardiac::cli {

struct Ran {
  int rc = -1;
  std::string out;
  std::string err;
};

inline Ran run(Runner (*register_fn)(CLI::App&), const char* name, std::vector<std::string> args,
               const Clock& clock) {
  CLI::App app{"test", "cardiac"};
  CLI::App* sub = app.add_subcommand(name, "");
  Runner runner = register_fn(*sub);
  args.insert(args.begin(), name);
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  Ran r;
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    r.rc = e.get_exit_code() == 0 ? 0 : kExitUsage;
    r.err = e.what();
    return r;
  }
  std::ostringstream out;
  std::ostringstream err;
  Context ctx{out, err, clock, false};
  r.rc = runner(ctx);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace cardiac::cli
