// SPDX-License-Identifier: Apache-2.0
// Child process management with posix_spawn (safe in multi-threaded parents).
#include "platform/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <utility>

extern char** environ;

namespace cardiac {

namespace {

TimeNs os_monotonic() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<TimeNs>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

}  // namespace

TimeNs io_deadline(DurationNs within) {
  return os_monotonic() + within;
}

Result<std::string> Child::read_line_within(DurationNs timeout) {
  return read_line(io_deadline(timeout));
}

bool Child::wait_exit_within(DurationNs timeout) {
  const TimeNs until = io_deadline(timeout);
  while (!try_wait()) {
    if (os_monotonic() >= until) return false;
    timespec ts{0, 2 * kNsPerMs};
    nanosleep(&ts, nullptr);
  }
  return true;
}
namespace {

std::mutex g_abandoned_mu;
std::vector<pid_t> g_abandoned;

std::vector<std::string> build_env(const SpawnOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    std::string_view key = entry.substr(0, eq);
    bool overridden = std::any_of(options.env.begin(), options.env.end(),
                                  [&](const auto& kv) { return kv.first == key; });
    if (!overridden) env.emplace_back(entry);
  }
  for (const auto& [k, v] : options.env) {
    std::string kv = k;
    kv += '=';
    kv += v;
    env.push_back(std::move(kv));
  }
  return env;
}

}  // namespace

Child::Child(Child&& other) noexcept {
  *this = std::move(other);
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (running()) kill_and_abandon(0);
    close_fds();
    pid_ = std::exchange(other.pid_, -1);
    stdin_fd_ = std::exchange(other.stdin_fd_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    buffer_ = std::move(other.buffer_);
    exit_status_ = std::exchange(other.exit_status_, std::nullopt);
  }
  return *this;
}

Child::~Child() {
  if (running()) kill_and_abandon(0);
  close_fds();
}

void Child::close_fds() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdin_fd_ = stdout_fd_ = -1;
}

Result<Child> Child::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return fail(Error::invalid("empty argv"));
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  if (options.pipe_stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0) return fail(Error::io("pipe", errno));
  if (options.pipe_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    int saved = errno;
    if (in_pipe[0] >= 0) ::close(in_pipe[0]), ::close(in_pipe[1]);
    return fail(Error::io("pipe", saved));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.pipe_stdin) posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  if (options.pipe_stdout) posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  for (const auto& [from, to] : options.pass_fds)
    posix_spawn_file_actions_adddup2(&actions, from, to);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);

  std::vector<std::string> env = build_env(options);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (options.pipe_stdin) ::close(in_pipe[0]);
  if (options.pipe_stdout) ::close(out_pipe[1]);
  if (rc != 0) {
    if (options.pipe_stdin) ::close(in_pipe[1]);
    if (options.pipe_stdout) ::close(out_pipe[0]);
    return fail(Error::io(options.argv[0], rc));
  }
  Child child;
  child.pid_ = pid;
  child.stdin_fd_ = options.pipe_stdin ? in_pipe[1] : -1;
  child.stdout_fd_ = options.pipe_stdout ? out_pipe[0] : -1;
  return child;
}

Status Child::write_all(std::string_view data) {
  if (stdin_fd_ < 0) return fail(Error::unavailable("child stdin is closed"));
  while (!data.empty()) {
    // MSG_NOSIGNAL does not apply to pipes; SIGPIPE is ignored process-wide by the CLI.
    ssize_t n = ::write(stdin_fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::io("child stdin", errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Result<std::string> Child::read_line(TimeNs deadline) {
  if (stdout_fd_ < 0) return fail(Error::unavailable("child stdout is closed"));
  while (true) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    TimeNs now = os_monotonic();
    if (now >= deadline) return fail(Error::timeout("no answer from child before the deadline"));
    DurationNs left = deadline - now;
    int timeout_ms = static_cast<int>(std::min<DurationNs>(left / kNsPerMs + 1, INT_MAX));
    pollfd pfd{stdout_fd_, POLLIN, 0};
    int rc = ::poll(&pfd, 1, timeout_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return fail(Error::io("poll", errno));
    }
    if (rc == 0) continue;
    char buf[65536];
    ssize_t n = ::read(stdout_fd_, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(Error::io("child stdout", errno));
    }
    if (n == 0) return fail(Error::unavailable("child closed its output"));
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void Child::signal(int sig) {
  if (!running()) return;
  ::kill(pid_, sig);
}

std::optional<int> Child::try_wait() {
  if (exit_status_ || pid_ <= 0) return exit_status_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_status_ = status;
  return exit_status_;
}

int Child::wait() {
  if (exit_status_ || pid_ <= 0) return exit_status_.value_or(-1);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  exit_status_ = status;
  return status;
}

void Child::kill_and_abandon(DurationNs grace) {
  if (!running()) return;
  if (try_wait()) return;
  ::kill(pid_, SIGKILL);
  // A process in uninterruptible sleep inside the driver cannot die until the call returns;
  // poll briefly, then leave it to reap_abandoned() rather than block.
  TimeNs until = os_monotonic() + grace;
  while (!try_wait()) {
    if (os_monotonic() >= until) {
      std::lock_guard lock(g_abandoned_mu);
      g_abandoned.push_back(pid_);
      exit_status_ = -1;
      return;
    }
    timespec ts{0, 5 * kNsPerMs};
    nanosleep(&ts, nullptr);
  }
}

int reap_abandoned() {
  std::lock_guard lock(g_abandoned_mu);
  std::erase_if(g_abandoned, [](pid_t pid) {
    int status = 0;
    return ::waitpid(pid, &status, WNOHANG) == pid;
  });
  return static_cast<int>(g_abandoned.size());
}

Result<std::string> self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0) return fail(Error::io("/proc/self/exe", errno));
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace cardiac
