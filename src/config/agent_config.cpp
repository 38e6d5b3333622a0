// SPDX-License-Identifier: Apache-2.0
// Parsing of the agent's settings and notifiers.
#include "config/agent_config.h"

#include <filesystem>
#include <fstream>

#include "config/toml_reader.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::config {

Result<std::pair<std::string, int>> split_listen(std::string_view listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return fail(Error::invalid(fmt::format("listen address '{}' is not ADDRESS:PORT", listen)));
  }
  std::string_view host = listen.substr(0, colon);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  auto port = parse_u64(listen.substr(colon + 1));
  if (!port || *port > 65535) {
    return fail(Error::invalid(fmt::format("listen address '{}' has no valid port", listen)));
  }
  return std::pair<std::string, int>{std::string(host), static_cast<int>(*port)};
}

Status read_agent(const toml::table& t, std::string_view origin, AgentSettings& s) {
  TableReader r(t, "agent", origin);
  CARDIAC_TRY(r.only({"state_dir", "group", "listen", "interval", "host_interval", "metrics_compat",
                      "token", "tls_cert", "tls_key", "rules", "default_rules", "expected_gpus",
                      "stale_after"}));
  CARDIAC_TRY(r.get("state_dir", s.state_dir));
  CARDIAC_TRY(r.get("group", s.group));
  CARDIAC_TRY(r.get("listen", s.listen));
  CARDIAC_TRY(r.get_duration("interval", s.interval));
  CARDIAC_TRY(r.get_duration("host_interval", s.host_interval));
  CARDIAC_TRY(r.get("metrics_compat", s.metrics_compat));
  CARDIAC_TRY(r.get("token", s.token));
  CARDIAC_TRY(r.get("tls_cert", s.tls_cert));
  CARDIAC_TRY(r.get("tls_key", s.tls_key));
  CARDIAC_TRY(r.get("rules", s.rules_file));
  CARDIAC_TRY(r.get("default_rules", s.default_rules));
  CARDIAC_TRY(r.get("expected_gpus", s.expected_gpus));
  CARDIAC_TRY(r.get_duration("stale_after", s.stale_after));
  if (!s.metrics_compat.empty() && s.metrics_compat != "dcgm") {
    const toml::node* n = t.get("metrics_compat");
    return fail(
        Error::invalid("'agent.metrics_compat' must be \"dcgm\" or empty", r.where(n->source())));
  }
  if (auto listen = split_listen(s.listen); !listen) {
    return fail(listen.error().with_context(r.where(t.get("listen")->source())));
  }
  return {};
}

Status read_notifiers(const toml::table& root, std::string_view origin,
                      std::vector<NotifierSettings>& out) {
  const toml::node* n = root.get("notifier");
  if (!n) return {};
  const toml::array* arr = n->as_array();
  TableReader top(root, "", origin);
  if (!arr)
    return fail(Error::invalid("'notifier' must be an array of tables ([[notifier]])",
                               top.where(n->source())));
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    if (!t) {
      return fail(
          Error::invalid("'notifier' entries must be tables", top.where((*arr)[i].source())));
    }
    TableReader r(*t, fmt::format("notifier[{}]", i), origin);
    CARDIAC_TRY(r.only({"type", "url", "argv", "headers", "timeout"}));
    NotifierSettings ns;
    ns.where = r.where(t->source());
    CARDIAC_TRY(r.get("type", ns.type));
    CARDIAC_TRY(r.get("url", ns.url));
    CARDIAC_TRY(r.get("argv", ns.argv));
    CARDIAC_TRY(r.get("headers", ns.headers));
    CARDIAC_TRY(r.get_duration("timeout", ns.timeout));
    if (ns.type == "alertmanager" || ns.type == "webhook") {
      if (ns.url.empty()) {
        return fail(Error::invalid(fmt::format("'{}' needs a url", r.key_name("type")), ns.where));
      }
    } else if (ns.type == "exec") {
      if (ns.argv.empty() || ns.argv[0].empty() || ns.argv[0][0] != '/') {
        return fail(Error::invalid(
            fmt::format("'{}' needs argv with an absolute program path (no shell is used)",
                        r.key_name("argv")),
            ns.where));
      }
    } else if (ns.type != "log") {
      return fail(Error::invalid(
          fmt::format("'{}' must be alertmanager, webhook, exec or log", r.key_name("type")),
          ns.where));
    }
    out.push_back(std::move(ns));
  }
  return {};
}

std::optional<AgentAddress> agent_address(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  auto port = parse_u64(listen.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) return std::nullopt;
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  return AgentAddress{host, static_cast<int>(*port)};
}

std::string agent_client_token(const AgentSettings& agent, const std::string& state_dir) {
  if (!agent.token.empty()) return agent.token;
  std::ifstream in(std::filesystem::path(state_dir) / "api-token");
  std::string token;
  if (in) std::getline(in, token);
  return std::string(trim(token));
}

}  // namespace cardiac::config
