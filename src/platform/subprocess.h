// SPDX-License-Identifier: Apache-2.0
// Child processes with pipes and deadlines: the tool that keeps a hung driver call away from us.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac {

struct SpawnOptions {
  std::vector<std::string> argv{};                         // argv[0] is the program path
  std::vector<std::pair<std::string, std::string>> env{};  // added to (or replacing in) environ
  // Extra descriptors handed to the child: {parent fd, child fd number}.
  std::vector<std::pair<int, int>> pass_fds{};
  bool pipe_stdin = true;
  bool pipe_stdout = true;
  bool new_process_group = true;
};

// A running child. Moving is allowed; destroying a child that is still running kills it
// (SIGKILL) and, if it cannot be reaped at once (stuck in the kernel), hands its pid to the
// abandoned list that reap_abandoned() empties later. It never blocks.
// Now plus `within` on CLOCK_MONOTONIC: a deadline for read_line().
[[nodiscard]] TimeNs io_deadline(DurationNs within);

class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  ~Child();

  [[nodiscard]] static Result<Child> spawn(const SpawnOptions& options);

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool running() const { return pid_ > 0 && !exit_status_; }

  // Writes everything or fails (EPIPE when the child is gone).
  [[nodiscard]] Status write_all(std::string_view data);
  // Returns the next line (without '\n'). Errors: kTimeout once `deadline` passes with no
  // full line; kUnavailable on end of file. Deadlines here are on the kernel's monotonic clock
  // (io_deadline()), the one poll() waits on: a pipe answers in real time whatever Clock the
  // caller runs on, so this is not a Clock seam.
  [[nodiscard]] Result<std::string> read_line(TimeNs deadline);
  // The same with a deadline `timeout` from now.
  [[nodiscard]] Result<std::string> read_line_within(DurationNs timeout);
  // Waits up to `timeout` for the child to exit on its own; true once it has.
  bool wait_exit_within(DurationNs timeout);

  void signal(int sig);
  // Non-blocking: the exit status once the child has exited (waitpid status word).
  std::optional<int> try_wait();
  // Blocks until the child exits; returns the waitpid status word.
  int wait();
  // Kills the child and reaps it if it dies within `grace`; otherwise abandons it.
  void kill_and_abandon(DurationNs grace = 200 * kNsPerMs);

 private:
  void close_fds();
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  std::optional<int> exit_status_;
};

// Reaps abandoned children that have exited since; returns how many are still stuck.
int reap_abandoned();

// Path of the running executable (/proc/self/exe resolved), for re-executing ourselves.
[[nodiscard]] Result<std::string> self_executable();

}  // namespace cardiac
