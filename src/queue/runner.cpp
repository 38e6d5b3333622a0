// SPDX-License-Identifier: Apache-2.0
// Runner files (spec and exit records, atomic writes) and starting a runner from the agent.
#include "queue/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/format.h"
#include "core/strings.h"
#include "queue/proc.h"

extern char** environ;

namespace cardiac::queue {

std::string jobs_dir(const std::string& state_dir) {
  return state_dir + "/jobs";
}

JobPaths job_paths(const std::string& state_dir, JobId id) {
  std::string base = fmt::format("{}/{}", jobs_dir(state_dir), id);
  return {base + ".spec.json", base + ".out", base + ".err", base + ".exit"};
}

nlohmann::json to_json(const RunSpec& s) {
  return {
      {"job", s.job},       {"attempt", s.attempt},          {"argv", s.argv},     {"env", s.env},
      {"cwd", s.cwd},       {"switch_user", s.switch_user},  {"uid", s.uid},       {"gid", s.gid},
      {"groups", s.groups}, {"time_limit_ns", s.time_limit}, {"grace_ns", s.grace}};
}

Result<RunSpec> parse_run_spec(const nlohmann::json& j) {
  try {
    RunSpec s;
    s.job = j.at("job").get<JobId>();
    s.attempt = j.at("attempt").get<unsigned>();
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::map<std::string, std::string>>();
    s.cwd = j.at("cwd").get<std::string>();
    s.switch_user = j.at("switch_user").get<bool>();
    s.uid = j.at("uid").get<uid_t>();
    s.gid = j.at("gid").get<gid_t>();
    s.groups = j.at("groups").get<std::vector<gid_t>>();
    s.time_limit = j.at("time_limit_ns").get<DurationNs>();
    s.grace = j.at("grace_ns").get<DurationNs>();
    if (s.argv.empty()) return fail(Error::parse("run spec: empty argv"));
    return s;
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::parse(fmt::format("run spec: {}", e.what())));
  }
}

nlohmann::json to_json(const ExitRecord& e) {
  nlohmann::json j{{"job", e.job},         {"attempt", e.attempt},       {"timed_out", e.timed_out},
                   {"stopped", e.stopped}, {"started_ns", e.started_ns}, {"ended_ns", e.ended_ns}};
  j["exit_code"] = e.exit_code ? nlohmann::json(*e.exit_code) : nlohmann::json();
  j["signal"] = e.signal ? nlohmann::json(*e.signal) : nlohmann::json();
  if (!e.error.empty()) j["error"] = e.error;
  return j;
}

Result<ExitRecord> parse_exit_record(const nlohmann::json& j) {
  try {
    ExitRecord e;
    e.job = j.at("job").get<JobId>();
    e.attempt = j.at("attempt").get<unsigned>();
    if (j.contains("exit_code") && !j["exit_code"].is_null()) e.exit_code = j["exit_code"];
    if (j.contains("signal") && !j["signal"].is_null()) e.signal = j["signal"];
    e.timed_out = j.value("timed_out", false);
    e.stopped = j.value("stopped", false);
    e.started_ns = j.value("started_ns", TimeNs{0});
    e.ended_ns = j.value("ended_ns", TimeNs{0});
    e.error = j.value("error", std::string());
    return e;
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::parse(fmt::format("exit record: {}", e.what())));
  }
}

Status write_file_atomically(const std::string& path, const std::string& text, unsigned mode) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                  static_cast<mode_t>(mode));
  if (fd < 0) return fail(Error::io(tmp, errno));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      ::close(fd);
      return fail(Error::io(tmp, saved));
    }
    done += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, static_cast<mode_t>(mode));
  if (::fsync(fd) != 0 || ::close(fd) != 0) return fail(Error::io(tmp, errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(Error::io(path, errno));
  return {};
}

Result<std::optional<ExitRecord>> read_exit_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::optional<ExitRecord>();
    return fail(Error::io(path, errno));
  }
  std::stringstream s;
  s << in.rdbuf();
  auto j = nlohmann::json::parse(s.str(), nullptr, false);
  if (j.is_discarded()) return fail(Error::parse("not JSON", path));
  auto e = parse_exit_record(j);
  if (!e) return fail(e.error().with_context(path));
  return std::optional<ExitRecord>(std::move(*e));
}

Result<RunnerHandle> launch_runner(const std::string& executable, const std::string& state_dir,
                                   JobId id, unsigned attempt) {
  std::vector<std::string> args = {executable, kRunnerSubcommand, state_dir, std::to_string(id),
                                   std::to_string(attempt)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Born with the signals it waits for blocked: a stop that arrives before it is ready is
  // kept pending for it, not fatal to it.
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&blocked, sig);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &blocked);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // Its own session: the agent's terminal, process group and death do not reach it.
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, executable.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail(Error::io(executable, rc).with_context("starting the job runner"));
  RunnerHandle h;
  h.pid = pid;
  // The start time is fixed at fork, so it can be read at once.
  if (auto st = read_proc_stat(pid)) h.start_ticks = st->start_ticks;
  return h;
}

std::optional<RunnerHandle> find_runner(const std::string& state_dir, JobId id, unsigned attempt) {
  std::string want = std::string(kRunnerSubcommand) + '\0' + state_dir + '\0' + std::to_string(id) +
                     '\0' + std::to_string(attempt) + '\0';
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    auto pid = parse_i64(e.path().filename().string());
    if (!pid) continue;
    std::ifstream in(e.path() / "cmdline");
    std::stringstream s;
    s << in.rdbuf();
    std::string cmd = s.str();
    auto first = cmd.find('\0');
    if (first == std::string::npos || cmd.substr(first + 1) != want) continue;
    auto st = read_proc_stat(static_cast<pid_t>(*pid));
    if (!st || st->state == 'Z') continue;
    return RunnerHandle{st->pid, st->start_ticks};
  }
  return std::nullopt;
}

}  // namespace cardiac::queue
