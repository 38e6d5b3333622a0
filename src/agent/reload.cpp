// SPDX-License-Identifier: Apache-2.0
// Comparing a re-read configuration with the running one.
#include "agent/reload.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/format.h"

namespace cardiac::agent {
namespace {

// Where a table sits in the file is kept for error messages; moving it changes nothing.
config::QueueSettings without_positions(config::QueueSettings q) {
  for (auto& a : q.accounts) a.where.clear();
  for (auto& u : q.users) u.where.clear();
  return q;
}

}  // namespace

std::string rules_fingerprint(const config::AgentSettings& a) {
  std::string text = fmt::format("default_rules={} expected_gpus={} rules={}\n", a.default_rules,
                                 a.expected_gpus, a.rules_file);
  if (a.rules_file.empty()) return text;
  std::ifstream in(a.rules_file);
  if (!in) return text + "unreadable: " + std::strerror(errno);
  std::stringstream body;
  body << in.rdbuf();
  return text + body.str();
}

bool notifiers_changed(const config::Config& running, const config::Config& next) {
  auto bare = [](std::vector<config::NotifierSettings> v) {
    for (auto& n : v) n.where.clear();
    return v;
  };
  return bare(running.notifiers) != bare(next.notifiers);
}

std::vector<std::string> restart_keys(const config::Config& running, const config::Config& next) {
  std::vector<std::string> out;
  if (running.nvml != next.nvml) out.emplace_back("[nvml]");
  if (running.host != next.host) out.emplace_back("[host]");
  const config::AgentSettings& a = running.agent;
  const config::AgentSettings& b = next.agent;
  auto key = [&](bool changed, const char* name) {
    if (changed) out.push_back(fmt::format("[agent] {}", name));
  };
  key(a.state_dir != b.state_dir, "state_dir");
  key(a.group != b.group, "group");
  key(a.listen != b.listen, "listen");
  key(a.interval != b.interval, "interval");
  key(a.host_interval != b.host_interval, "host_interval");
  key(a.metrics_compat != b.metrics_compat, "metrics_compat");
  key(a.token != b.token, "token");
  key(a.tls_cert != b.tls_cert, "tls_cert");
  key(a.tls_key != b.tls_key, "tls_key");
  key(a.stale_after != b.stale_after, "stale_after");
  // A key added to [agent] later and not named above is still reported, as the table.
  config::AgentSettings live_equal = b;
  live_equal.rules_file = a.rules_file;
  live_equal.default_rules = a.default_rules;
  live_equal.expected_gpus = a.expected_gpus;
  if (live_equal != a && (out.empty() || out.back().rfind("[agent]", 0) != 0)) {
    out.emplace_back("[agent]");
  }
  if (running.kmsg != next.kmsg) out.emplace_back("[kmsg]");
  if (running.store != next.store) out.emplace_back("[store]");
  if (running.serving != next.serving) out.emplace_back("[serving]");
  if (running.security != next.security) out.emplace_back("[security]");  // the security watch
  if (running.fleet != next.fleet) out.emplace_back("[fleet]");           // read by the dashboard
  if (without_positions(running.queue) != without_positions(next.queue)) {
    out.emplace_back("[queue]");
  }
  return out;
}

}  // namespace cardiac::agent
