// SPDX-License-Identifier: Apache-2.0
// Receivers on this machine: a hook program (exec) and the agent's own log.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>

#include <fmt/format.h>

#include "core/log.h"
#include "core/time.h"
#include "notify/notifier.h"
#include "notify/sigpipe.h"
#include "platform/subprocess.h"

namespace cardiac::notify {
namespace {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// The hook's deadlines are on the clock poll() waits on.
TimeNs mono_now() {
  return io_deadline(0);
}

// Non-blocking writes with poll, because a hook that never reads would otherwise block us
// forever once the body exceeds the pipe buffer.
Status write_until(int fd, std::string_view data, TimeNs deadline) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return fail(Error::io("hook stdin", errno));
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return fail(Error::io("hook stdin", errno));
    TimeNs left = deadline - mono_now();
    if (left <= 0) return fail(Error::timeout("hook did not read its input in time"));
    pollfd pfd{fd, POLLOUT, 0};
    ::poll(&pfd, 1, static_cast<int>(std::min<DurationNs>(left / kNsPerMs + 1, INT_MAX)));
  }
  return {};
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("ended with wait status {}", status);
}

}  // namespace

Result<std::unique_ptr<ExecNotifier>> ExecNotifier::create(std::vector<std::string> argv,
                                                           DurationNs timeout) {
  if (argv.empty()) return fail(Error::invalid("empty command", "exec notifier"));
  if (argv[0].empty() || argv[0].front() != '/')
    return fail(Error::invalid("program must be an absolute path", argv[0]));
  if (::access(argv[0].c_str(), X_OK) != 0)
    return fail(Error::io(argv[0], errno).with_context("exec notifier"));
  return std::unique_ptr<ExecNotifier>(new ExecNotifier(std::move(argv), timeout));
}

std::string ExecNotifier::name() const {
  return "exec " + argv_[0];
}

Status ExecNotifier::deliver(const std::vector<Notification>& batch) {
  if (batch.empty()) return {};
  const std::string body = dump_json(to_webhook_body(batch)) + "\n";
  detail::SigpipeGuard guard;
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(Error::io("pipe", errno));
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  UniqueFd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (devnull.get() < 0) return fail(Error::io("/dev/null", errno));

  // Our own stdin pipe rather than Child's: Child cannot close its stdin early, and the hook
  // needs end-of-file to know the body is complete.
  SpawnOptions options;
  options.argv = argv_;
  options.pipe_stdin = false;
  options.pipe_stdout = false;
  options.pass_fds = {{read_end.get(), 0}, {devnull.get(), 1}};
  auto child = Child::spawn(options);
  read_end.reset();
  devnull.reset();
  if (!child) return fail(child.error().with_context(name()));

  const TimeNs deadline = mono_now() + timeout_;
  auto written = write_until(write_end.get(), body, deadline);
  write_end.reset();
  // A hook that exits without reading (EPIPE) is judged by its exit status alone.
  if (!written && written.error().code == ErrorCode::kTimeout) {
    child->kill_and_abandon();
    return fail(written.error().with_context(name()));
  }
  DurationNs nap = kNsPerMs;
  while (true) {
    if (auto status = child->try_wait()) {
      if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return {};
      return fail(Error::unavailable(describe_exit(*status), name()));
    }
    if (mono_now() >= deadline) {
      child->kill_and_abandon();
      return fail(Error::timeout(
          fmt::format("did not finish within {}, killed", format_duration(timeout_)), name()));
    }
    // Short naps first so a quick hook is reaped quickly, then back off to spare the CPU.
    timespec ts{0, static_cast<long>(nap)};
    nanosleep(&ts, nullptr);
    nap = std::min<DurationNs>(nap * 2, 50 * kNsPerMs);
  }
}

Status LogNotifier::deliver(const std::vector<Notification>& batch) {
  for (const auto& n : batch) {
    std::string labels;
    for (const auto& [k, v] : n.labels)
      labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, v);
    auto text = n.annotations.find("summary");
    if (text == n.annotations.end()) text = n.annotations.find("description");
    std::string line = fmt::format("alert {} {} severity={} {{{}}}{}{}", n.status, n.alertname,
                                   n.severity, labels, text == n.annotations.end() ? "" : ": ",
                                   text == n.annotations.end() ? "" : text->second);
    if (n.resolved())
      log::info("{}", line);
    else
      log::warn("{}", line);
  }
  return {};
}

}  // namespace cardiac::notify
