// SPDX-License-Identifier: Apache-2.0
// A tmux server of a test's own, for full-screen commands: a detached session of a given size,
// keys sent, the pane captured, the pane's state asked: how the tests drive `cardiac top`.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {

// tmux from PATH (the spawn helper runs a path, it does not search); empty when absent.
inline std::string tmux_path() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/tmux").c_str(), X_OK) == 0) return dir + "/tmux";
  }
  return "";
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

inline bool tmux_installed() {
  return !tmux_path().empty();
}

class Tmux {
 public:
  Tmux() {
    static std::atomic<int> counter{0};
    socket_ = "cardiac-it-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  }
  ~Tmux() { run({"kill-server"}); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  RunResult run(std::vector<std::string> args) const {
    std::vector<std::string> argv{tmux_path(), "-L", socket_, "-f", "/dev/null"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv);
  }
  // A session of `w`×`h` running `shell` (a sh -c script) in its only pane.
  bool start(const std::string& shell, int w = 80, int h = 24) const {
    return run({"new-session", "-d", "-s", "t", "-x", std::to_string(w), "-y", std::to_string(h),
                "sh", "-c", shell})
               .exit_code == 0;
  }
  // With `escapes`, the pane's colours and attributes as escape sequences (capture-pane -e).
  [[nodiscard]] std::string capture(bool escapes = false) const {
    std::vector<std::string> args{"capture-pane", "-p", "-t", "t"};
    if (escapes) args.push_back("-e");
    return run(args).out;
  }
  [[nodiscard]] std::string display(const std::string& format) const {
    auto out = run({"display-message", "-p", "-t", "t", format}).out;
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  void keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> args{"send-keys", "-t", "t"};
    args.insert(args.end(), keys.begin(), keys.end());
    run(args);
  }
  // Polls the pane until `ready` holds for its text; the deadline only stops a broken test.
  bool wait_for(const std::function<bool(const std::string&)>& ready, int seconds = 30) const {
    return eventually([&] { return ready(capture()); }, seconds);
  }

 private:
  std::string socket_;
};

// The pane's script: the command, then what a person would see back at the shell (its exit
// status, whether the terminal is back in canonical mode with echo).
inline std::string pane_script(const std::string& command) {
  return command +
         "; echo \"exit=$?\"; "
         "if stty -a | grep -qwE -- '-icanon|-echo'; then echo tty=raw; else echo tty=sane; fi; "
         "exec cat";
}

}  // namespace cardiac::e2e
