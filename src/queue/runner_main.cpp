// SPDX-License-Identifier: Apache-2.0
// The job runner process: privilege drop, output files, process group, time limit, exit record.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/format.h"
#include "core/strings.h"
#include "queue/runner.h"

extern char** environ;

namespace cardiac::queue {
namespace {

// A note from the runner itself, appended to the job's stderr log.
void note(int fd, const std::string& text) {
  std::string line = "cardiac: " + text + "\n";
  if (fd >= 0) (void)!::write(fd, line.data(), line.size());
}

int open_log(const std::string& path, const RunSpec& spec) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0 && spec.switch_user) (void)!::fchown(fd, spec.uid, spec.gid);
  return fd;
}

// What the child reports through the close-on-exec pipe when it cannot exec.
struct ChildFailure {
  int stage = 0;  // 1 credentials, 2 working directory, 3 exec
  int err = 0;
};

std::string describe(const ChildFailure& f, const RunSpec& spec) {
  switch (f.stage) {
    case 1:
      return fmt::format("cannot switch to uid {} gid {}: {}", spec.uid, spec.gid,
                         std::strerror(f.err));
    case 2:
      return fmt::format("cannot enter the working directory {}: {}", spec.cwd,
                         std::strerror(f.err));
    default:
      return fmt::format("cannot run '{}': {}", spec.argv[0], std::strerror(f.err));
  }
}

// Everything the child needs, built before fork so the child only makes system calls.
struct Prepared {
  std::vector<std::string> argv_s;
  std::vector<char*> argv;
  std::vector<std::string> env_s;
  std::vector<char*> env;
};

Prepared prepare(const RunSpec& spec) {
  Prepared p;
  p.argv_s = spec.argv;
  for (auto& a : p.argv_s) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (const auto& [k, v] : spec.env) {
    std::string kv = k;
    kv += '=';
    kv += v;
    p.env_s.push_back(std::move(kv));
  }
  for (auto& e : p.env_s) p.env.push_back(e.data());
  p.env.push_back(nullptr);
  return p;
}

[[noreturn]] void child_main(const RunSpec& spec, Prepared& p, int out_fd, int err_fd,
                             int report_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT}) signal(sig, SIG_DFL);
  setpgid(0, 0);
  umask(022);  // the runner's own 077 is for its files, not the job's
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  ChildFailure f;
  if (spec.switch_user) {
    if (setgroups(spec.groups.size(), spec.groups.data()) != 0 || setgid(spec.gid) != 0 ||
        setuid(spec.uid) != 0) {
      f = {1, errno};
    }
  }
  if (f.stage == 0 && chdir(spec.cwd.c_str()) != 0) f = {2, errno};
  if (f.stage == 0) {
    // execvp searches the PATH of `environ`: the job's own.
    environ = p.env.data();
    execvp(p.argv[0], p.argv.data());
    f = {3, errno};
  }
  (void)!::write(report_fd, &f, sizeof(f));
  _exit(127);
}

class Runner {
 public:
  Runner(RunSpec spec, JobPaths paths, const Clock& clock)
      : spec_(std::move(spec)), paths_(std::move(paths)), clock_(clock) {}

  int run() {
    out_fd_ = open_log(paths_.out, spec_);
    err_fd_ = open_log(paths_.err, spec_);
    if (out_fd_ < 0 || err_fd_ < 0) {
      return finish_with_error(fmt::format("cannot open the log files: {}", std::strerror(errno)));
    }
    sigset_t set = waited_signals();
    sigprocmask(SIG_BLOCK, &set, nullptr);
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return finish_with_error("pipe failed");
    Prepared p = prepare(spec_);
    record_.started_ns = clock_.now();
    child_ = fork();
    if (child_ < 0) return finish_with_error(fmt::format("fork: {}", std::strerror(errno)));
    if (child_ == 0) child_main(spec_, p, out_fd_, err_fd_, report[1]);
    setpgid(child_, child_);  // both sides set it, so neither races the other
    ::close(report[1]);
    ChildFailure f;
    ssize_t n;
    do {
      n = ::read(report[0], &f, sizeof(f));
    } while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof(f))) {
      record_.error = describe(f, spec_);
      note(err_fd_, record_.error);
    }
    supervise(set);
    return write_record();
  }

 private:
  static sigset_t waited_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&set, sig);
    return set;
  }

  // Signals the whole process group: the job and whatever it started.
  void signal_group(int sig) const {
    if (child_ > 0) ::kill(-child_, sig);
  }

  void begin_stop(TimeNs now) {
    if (kill_at_) return;
    signal_group(SIGTERM);
    signal_group(SIGCONT);  // a stopped job must wake up to see the SIGTERM
    kill_at_ = now + spec_.grace;
  }

  void supervise(const sigset_t& set) {
    // 0: no time limit.
    const TimeNs deadline = spec_.time_limit > 0 ? clock_.monotonic() + spec_.time_limit : 0;
    while (true) {
      int status = 0;
      pid_t r = waitpid(child_, &status, WNOHANG);
      if (r == child_) {
        if (WIFEXITED(status)) record_.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) record_.signal = WTERMSIG(status);
        break;
      }
      TimeNs now = clock_.monotonic();
      if (deadline > 0 && now >= deadline && !kill_at_) {
        record_.timed_out = true;
        note(err_fd_, fmt::format("time limit of {} s reached; stopping the job",
                                  static_cast<double>(spec_.time_limit) / 1e9));
        begin_stop(now);
      }
      if (kill_at_ && now >= *kill_at_) {
        signal_group(SIGKILL);
        kill_at_ = now + 3600 * kNsPerSec;  // once; the SIGCHLD ends the wait
      }
      TimeNs next = now + 3600 * kNsPerSec;
      if (deadline > 0 && !kill_at_) next = std::min(next, deadline);
      if (kill_at_) next = std::min(next, *kill_at_);
      DurationNs wait = std::max<DurationNs>(next - now, kNsPerMs);
      timespec ts{static_cast<time_t>(wait / kNsPerSec), static_cast<long>(wait % kNsPerSec)};
      int sig = sigtimedwait(&set, nullptr, &ts);
      if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
        if (!record_.stopped) note(err_fd_, "stopped by the agent");
        record_.stopped = true;
        begin_stop(clock_.monotonic());
      }
    }
    // Whatever the job left behind in its group goes with it: no stray process may keep a GPU.
    signal_group(SIGKILL);
  }

  int finish_with_error(const std::string& message) {
    record_.error = message;
    note(err_fd_, message);
    record_.exit_code = 127;
    return write_record();
  }

  int write_record() {
    record_.job = spec_.job;
    record_.attempt = spec_.attempt;
    record_.ended_ns = clock_.now();
    if (record_.started_ns == 0) record_.started_ns = record_.ended_ns;
    auto st = write_file_atomically(paths_.exit, to_json(record_).dump() + "\n");
    if (!st) {
      note(err_fd_, "cannot write the exit record: " + st.error().what());
      return 1;
    }
    return 0;
  }

  RunSpec spec_;
  JobPaths paths_;
  const Clock& clock_;
  ExitRecord record_;
  int out_fd_ = -1;
  int err_fd_ = -1;
  pid_t child_ = -1;
  std::optional<TimeNs> kill_at_;
};

}  // namespace

int run_job_runner(int argc, char** argv) {
  // Nothing the agent had open may stay open here for the job's lifetime (a listening socket
  // would keep the agent's port after it died).
  close_range(3, ~0U, 0);
  if (argc < 5) return 2;
  // The runner process's own root: its one clock is the real one.
  const Clock& clock = SystemClock::instance();
  std::string state_dir = argv[2];
  auto id = parse_i64(argv[3]);
  auto attempt = parse_i64(argv[4]);
  if (!id || !attempt) return 2;
  JobPaths paths = job_paths(state_dir, *id);
  std::ifstream in(paths.spec);
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  auto spec = j.is_discarded() ? Result<RunSpec>(fail(Error::parse("unreadable", paths.spec)))
                               : parse_run_spec(j);
  if (!spec || spec->job != *id || spec->attempt != static_cast<unsigned>(*attempt)) {
    // Record the failure so the agent does not wait for a job that never started.
    ExitRecord e;
    e.job = *id;
    e.attempt = static_cast<unsigned>(*attempt);
    e.exit_code = 127;
    e.error = spec ? "run spec is for another attempt" : spec.error().what();
    e.started_ns = e.ended_ns = clock.now();
    return write_file_atomically(paths.exit, to_json(e).dump() + "\n") ? 1 : 3;
  }
  umask(077);
  return Runner(std::move(*spec), paths, clock).run();
}

}  // namespace cardiac::queue
