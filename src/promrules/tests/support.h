// SPDX-License-Identifier: Apache-2.0
// Test helper shared by the promtool tests: a shell command's exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace cardiac::promrules::promtool_test {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `cmd` through the shell (promtool in the test's directory, say) with both streams
// captured.
inline Outcome run(const std::string& cmd) {
  Outcome r;
  if (FILE* p = ::popen((cmd + " 2>&1").c_str(), "r")) {  // NOLINT(bugprone-command-processor)
    std::array<char, 4096> buf{};
    while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return r;
}

}  // namespace cardiac::promrules::promtool_test
