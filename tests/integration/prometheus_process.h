// SPDX-License-Identifier: Apache-2.0
// A real Prometheus for the length of a test, on loopback, and the queries the tests make.
#pragma once

#include <fcntl.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/support.h"

namespace cardiac::e2e {

inline constexpr const char* kPrometheus = "/usr/bin/prometheus";
inline constexpr const char* kPromtool = "/usr/bin/promtool";

// Prometheus for the length of a test: started, killed, its directory kept with the agent's.
class PrometheusProcess {
 public:
  PrometheusProcess(const std::string& dir, const std::string& config) : dir_(dir) {
    std::ofstream(dir_ + "/prometheus.yml") << config;
    // free_port() released the port it found; a test running beside this one may take it
    // first. Then Prometheus exits, and it is started again on another port.
    for (int attempt = 0; attempt < 3 && !start(); ++attempt) {
    }
  }
  ~PrometheusProcess() {
    if (child_.running()) {
      child_.signal(SIGKILL);
      child_.wait();
    }
  }
  [[nodiscard]] std::string log() const { return read_text(dir_ + "/prometheus.log"); }
  [[nodiscard]] int port() const { return port_; }

  // Started and listening on its port, or gone.
  bool start() {
    port_ = free_port();
    SpawnOptions o;
    o.argv = {kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
              "--storage.tsdb.path=" + dir_ + "/data",
              "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
    o.pipe_stdin = false;
    o.pipe_stdout = false;
    int log = ::open((dir_ + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    o.pass_fds = {{log, 2}};
    auto c = Child::spawn(o);
    ::close(log);
    if (!c) return false;
    child_ = std::move(*c);
    eventually([&] { return child_.try_wait() || listens_on(child_.pid(), port_); }, 60);
    return child_.running() && listens_on(child_.pid(), port_);
  }

  // GET `path` with `params`; the parsed body, or null when there is no answer.
  [[nodiscard]] nlohmann::json get(const std::string& path,
                                   const std::multimap<std::string, std::string>& params) const {
    auto body = http_get_body(port_, path, params);
    if (!body) return nlohmann::json();
    return nlohmann::json::parse(*body, nullptr, false);
  }
  [[nodiscard]] nlohmann::json query(const std::string& promql) const {
    return get("/api/v1/query", {{"query", promql}});
  }
  // The first value of an instant query, or -1.
  [[nodiscard]] double value(const std::string& promql) const {
    auto j = query(promql);
    if (!j.is_object() || !j["data"]["result"].is_array() || j["data"]["result"].empty()) return -1;
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  }

 private:
  std::string dir_;
  int port_ = 0;
  Child child_;
};

// A prometheus.yml scraping `ports` on loopback every second as job "cardiac", plus `down_port`
// where nothing listens (0: none), with the rules file `rules`, evaluated every second.
inline std::string loopback_scrape_config(const std::vector<int>& ports, int down_port,
                                          const std::string& rules) {
  std::string targets;
  for (int p : ports) {
    targets += (targets.empty() ? "" : ", ") + std::string("'127.0.0.1:") + std::to_string(p) + "'";
  }
  if (down_port != 0) {
    targets += (targets.empty() ? "" : ", ") + std::string("'127.0.0.1:") +
               std::to_string(down_port) + "'";
  }
  return "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
         "rule_files: ['" +
         rules +
         "']\n"
         "scrape_configs:\n  - job_name: cardiac\n    static_configs:\n"
         "      - targets: [" +
         targets + "]\n";
}

}  // namespace cardiac::e2e
