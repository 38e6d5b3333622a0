// SPDX-License-Identifier: Apache-2.0
// Runs `cardiac agent` as a real process on the fake NVML for end-to-end tests, with its own
// state directory, configuration and scenario file, all removed afterwards.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "platform/subprocess.h"
#include "tests/e2e/http.h"

namespace cardiac::e2e {

// A free loopback port: bind port 0, read it back, release it.
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

// Whether process `pid` holds a listening TCP socket on `port`: its socket inodes (from
// /proc/PID/fd) against the listening entries of /proc/net/tcp and tcp6.
inline bool listens_on(pid_t pid, int port) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      const auto colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port && inodes.count(inode) > 0) {
        return true;
      }
    }
  }
  return false;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls `ready` every 50 ms until it holds or `seconds` pass. Waiting for an observable
// condition, not for time: the bound only stops a broken test from hanging.
inline bool eventually(const std::function<bool()>& ready, double seconds = 30) {
  TimeNs until = SystemClock::instance().monotonic() + static_cast<TimeNs>(seconds * 1e9);
  while (SystemClock::instance().monotonic() < until) {
    if (ready()) return true;
    timespec ts{0, 50 * kNsPerMs};
    nanosleep(&ts, nullptr);
  }
  return ready();
}

class AgentProcess {
 public:
  // `extra_config` is appended to a configuration naming the fake NVML, a free port, a kernel
  // log file and a state directory in a fresh temporary directory.
  AgentProcess(const std::string& scenario_json_text, const std::string& extra_config) {
    char tmpl[] = "/tmp/cardiac-agent-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    port_ = free_port();
    write_scenario(scenario_json_text);
    std::ofstream(dir_ + "/kern.log").flush();
    std::ofstream cfg(dir_ + "/cardiac.toml");
    cfg << "[nvml]\nlibrary = \"" << FAKE_NVML_PATH << "\"\ntimeout = \"1s\"\n"
        << "[kmsg]\nsource = \"" << dir_ << "/kern.log\"\n"
        << extra_config << "\n";
    // The scenarios' GPU processes have made-up pids, which may be real processes of the
    // machine running the tests: the security watch would judge them. A test of the watch
    // configures [security] itself.
    if (extra_config.find("[security]") == std::string::npos) {
      cfg << "[security]\nwatch_interval = \"0s\"\n";
    }
    cfg << "[agent]\nstate_dir = \"" << dir_ << "/state\"\nlisten = \"127.0.0.1:" << port_ << "\"\n"
        << agent_keys_ << "\n";
  }
  ~AgentProcess() {
    kill9();
    std::filesystem::remove_all(dir_);
  }
  // Keys for the [agent] table (must be set before start()).
  void agent_keys(const std::string& keys) {
    agent_keys_ = keys;
    std::string text = read_text(config_path());
    std::ofstream(config_path(), std::ios::trunc) << text << keys << "\n";
  }
  void write_scenario(const std::string& text) const {
    std::string tmp = dir_ + "/scenario.json.tmp";
    std::ofstream(tmp, std::ios::trunc) << text;
    std::filesystem::rename(tmp, dir_ + "/scenario.json");
  }
  bool start() {
    return launch() && eventually([&] { return get("/healthz").first == 200; });
  }
  // Starts the agent and waits until /healthz answers at all, healthy or not. With `log`,
  // the agent's stderr goes to that file.
  bool launch(const std::string& log = "") {
    SpawnOptions o;
    o.argv = {CARDIAC_BINARY, "agent", "--config", config_path()};
    o.env = {{"CARDIAC_FAKE_NVML_SCENARIO", dir_ + "/scenario.json"}};
    o.pipe_stdin = false;
    o.pipe_stdout = false;
    // The agent's standard error goes to `log` when one is named, else to dir()/agent.stderr
    // after capture_stderr(), else to the test's.
    std::string err_path = !log.empty() ? log : capture_stderr_ ? dir_ + "/agent.stderr" : "";
    int err_fd = err_path.empty()
                     ? -1
                     : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (err_fd >= 0) o.pass_fds = {{err_fd, 2}};
    auto c = Child::spawn(o);
    if (err_fd >= 0) ::close(err_fd);
    if (!c) return false;
    child_ = std::move(*c);
    // Our agent listening, or gone. free_port() released the port it found, so a test running
    // beside this one may have taken it: then another agent answers /healthz, ours exits, and
    // this start is tried again on another port rather than talking to the wrong agent.
    if (!eventually([&] { return child_.try_wait() || listens_on(child_.pid(), port_); })) {
      return false;
    }
    if (!child_.running()) {
      if (retries_left_ == 0 || get("/healthz").first == 0) return false;
      --retries_left_;
      move_to_port(free_port());
      return launch(log);
    }
    return eventually([&] { return get("/healthz").first != 0; });
  }
  // Rewrites the configuration to listen on `port`.
  void move_to_port(int port) {
    std::string text = read_text(config_path());
    const std::string old = "listen = \"127.0.0.1:" + std::to_string(port_) + "\"";
    if (auto at = text.find(old); at != std::string::npos) {
      text.replace(at, old.size(), "listen = \"127.0.0.1:" + std::to_string(port) + "\"");
      std::ofstream(config_path(), std::ios::trunc) << text;
      port_ = port;
    }
  }
  // The agent's standard error goes to dir()/agent.stderr instead of the test's (before start()).
  void capture_stderr() { capture_stderr_ = true; }
  void kill9() {
    if (child_.running()) {
      child_.signal(SIGKILL);
      child_.wait();
    }
  }
  // Sends `sig` to the agent (SIGHUP: re-read the configuration).
  void signal(int sig) { child_.signal(sig); }
  // Whether the agent process is still there (reaps it when it is not).
  [[nodiscard]] bool alive() { return !child_.try_wait().has_value(); }
  int terminate() {
    child_.signal(SIGTERM);
    int status = child_.wait();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::pair<int, std::string> get(const std::string& path) const { return http_get(port_, path); }
  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] std::string config_path() const { return dir_ + "/cardiac.toml"; }
  [[nodiscard]] std::string state_dir() const { return dir_ + "/state"; }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return child_.pid(); }

 private:
  std::string dir_;
  std::string agent_keys_;
  int port_ = 0;
  int retries_left_ = 3;
  bool capture_stderr_ = false;
  Child child_;
};

inline nlohmann::json scenario(const std::string& name) {
  std::ifstream in(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios/" + name);
  return nlohmann::json::parse(in);
}

}  // namespace cardiac::e2e
