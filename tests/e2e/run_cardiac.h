// SPDX-License-Identifier: Apache-2.0
// Runs the cardiac binary as a user would, capturing stdout, stderr and the exit code.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "platform/subprocess.h"

namespace cardiac::e2e {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_all(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

// Runs `argv` (a program and its arguments) until it exits; stderr goes to a temporary file so
// that neither pipe can fill up while the other is drained.
inline RunResult run_program(std::vector<std::string> argv,
                             std::vector<std::pair<std::string, std::string>> env = {}) {
  char tmpl[] = "/tmp/cardiac-e2e-err-XXXXXX";
  int err_fd = mkstemp(tmpl);
  unlink(tmpl);
  SpawnOptions o;
  o.argv = std::move(argv);
  o.env = std::move(env);
  o.pass_fds = {{err_fd, 2}};
  o.pipe_stdin = false;
  RunResult r;
  auto child = Child::spawn(o);
  if (!child) {
    close(err_fd);
    r.err = child.error().what();
    return r;
  }
  // Drain stdout through the Child's own line reader until end of file.
  while (true) {
    auto line = child->read_line_within(120 * kNsPerSec);
    if (!line) break;
    r.out += *line + "\n";
  }
  int status = child->wait();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  lseek(err_fd, 0, SEEK_SET);
  r.err = read_all(err_fd);
  close(err_fd);
  return r;
}

// The cardiac binary under test with `args`.
inline RunResult run_cardiac(std::vector<std::string> args,
                             std::vector<std::pair<std::string, std::string>> env = {}) {
  std::vector<std::string> argv{CARDIAC_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(std::move(argv), std::move(env));
}

inline std::pair<std::string, std::string> scenario_env(const std::string& name) {
  return {"CARDIAC_FAKE_NVML_SCENARIO", std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/" + name};
}

}  // namespace cardiac::e2e
