// SPDX-License-Identifier: Apache-2.0
#include "slurm/scontrol.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "platform/subprocess.h"

namespace cardiac::slurm {
namespace {

std::string read_fd(int fd) {
  std::string s;
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) s.append(buf, static_cast<std::size_t>(n));
  return s;
}

// A bare program name through PATH (posix_spawn does not search it).
std::string resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  for (auto dir : split(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = std::string(dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return program;
}

}  // namespace

Result<std::string> Scontrol::run(const std::vector<std::string>& args) const {
  SpawnOptions o;
  o.argv = {resolve(path_)};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  // Unix seconds in every time scontrol prints: no time zone to guess.
  o.env = {{"SLURM_TIME_FORMAT", "%s"}};
  o.pipe_stdin = false;
  // Its standard error into memory, read after it exits: its message is the error we report.
  const int err_fd = memfd_create("scontrol-stderr", MFD_CLOEXEC);
  if (err_fd >= 0) o.pass_fds = {{err_fd, 2}};
  const std::string what = fmt::format("{} {}", path_, fmt::join(args, " "));
  auto child = Child::spawn(o);
  if (!child) {
    if (err_fd >= 0) ::close(err_fd);
    return fail(child.error().with_context(what));
  }
  const TimeNs deadline = io_deadline(timeout_);
  std::string out;
  while (true) {
    auto line = child->read_line(deadline);
    if (!line) {
      if (line.error().code == ErrorCode::kTimeout) {
        child->kill_and_abandon();
        if (err_fd >= 0) ::close(err_fd);
        return fail(
            Error::timeout(fmt::format("no answer within {}", format_duration(timeout_)), what));
      }
      break;  // end of output
    }
    out += *line;
    out += '\n';
  }
  const TimeNs left = deadline - io_deadline(0);
  if (!child->wait_exit_within(std::max<TimeNs>(left, 0))) {
    child->kill_and_abandon();
    if (err_fd >= 0) ::close(err_fd);
    return fail(
        Error::timeout(fmt::format("did not exit within {}", format_duration(timeout_)), what));
  }
  const int status = child->wait();
  std::string err = err_fd >= 0 ? read_fd(err_fd) : std::string();
  if (err_fd >= 0) ::close(err_fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string msg(trim(err));
    if (msg.empty()) msg = std::string(trim(out));
    if (msg.empty()) {
      msg = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                              : fmt::format("killed by signal {}", WTERMSIG(status));
    }
    return fail(Error::unavailable(msg, what));
  }
  return out;
}

Result<std::vector<NodeInfo>> Scontrol::nodes() const {
  auto out = run({"show", "node", "--oneliner"});
  if (!out) return fail(out.error());
  return parse_show_node(*out);
}

Result<JobInfo> Scontrol::job(const std::string& id) const {
  auto out = run({"show", "job", "--oneliner", id});
  if (!out) return fail(out.error());
  return parse_show_job(*out);
}

Status Scontrol::drain(const std::string& node, const std::string& reason) const {
  auto out = run({"update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason});
  if (!out) return fail(out.error());
  return {};
}

Status Scontrol::resume(const std::string& node) const {
  auto out = run({"update", "NodeName=" + node, "State=RESUME"});
  if (!out) return fail(out.error());
  return {};
}

}  // namespace cardiac::slurm
