// SPDX-License-Identifier: Apache-2.0
// The agent's control socket.
#include "agent/control.h"

#include <unistd.h>

#include <vector>

#include "alerts/alert_json.h"
#include "core/format.h"
#include "queue/protocol.h"
#include "server/params.h"

namespace cardiac::agent {
namespace {

Error denied(std::string message) {
  Error e = Error::invalid(std::move(message));
  e.code = ErrorCode::kPermission;
  return e;
}

Result<std::string> string_member(const nlohmann::json& req, const char* name, bool required) {
  auto it = req.find(name);
  if (it == req.end() || it->is_null()) {
    if (required) return fail(Error::invalid(fmt::format("{} is required", name), name));
    return std::string();
  }
  if (!it->is_string()) return fail(Error::invalid(fmt::format("{} must be a string", name), name));
  return it->get<std::string>();
}

Result<nlohmann::json> dispatch(AgentStore& store, const queue::Principal& who,
                                const nlohmann::json& req) {
  std::string op = req.value("op", std::string());
  if (op != "alerts.ack" && op != "alerts.silence") {
    return fail(Error::invalid(fmt::format("unknown op '{}'", op), "op"));
  }
  auto by = string_member(req, "by", false);
  if (!by) return fail(by.error());
  std::string recorded = by->empty() ? who.user : fmt::format("{} (says {})", who.user, *by);
  if (op == "alerts.ack") {
    auto id = req.find("id");
    if (id == req.end() || !id->is_number_integer() || id->get<std::int64_t>() < 0) {
      return fail(Error::invalid("id must be a non-negative integer", "id"));
    }
    auto a = store.with(
        [&](AgentStore::Access& s) { return s.alerts.ack(id->get<std::int64_t>(), recorded); });
    if (!a) return fail(a.error());
    return nlohmann::json{{"alert", alerts::to_json(*a)}};
  }
  auto matcher = string_member(req, "matcher", true);
  if (!matcher) return fail(matcher.error());
  auto duration_text = string_member(req, "duration", true);
  if (!duration_text) return fail(duration_text.error());
  auto duration = server::parse_duration_param(*duration_text);
  if (!duration) return fail(duration.error().with_context("duration"));
  auto comment = string_member(req, "comment", false);
  if (!comment) return fail(comment.error());
  auto si = store.with([&](AgentStore::Access& s) {
    return s.alerts.add_silence(*matcher, *duration, recorded, *comment);
  });
  if (!si) return fail(si.error());
  return nlohmann::json{{"silence", alerts::to_json(*si)}};
}

}  // namespace

nlohmann::json handle_control(AgentStore& store, const queue::AuthPolicy& policy,
                              const queue::Principal& who, const nlohmann::json& request) {
  if (!queue::is_admin(policy, who)) {
    return queue::error_response(denied(
        fmt::format("{} may not change alerts: only root, the agent's user and members of [queue] "
                    "admin_group may",
                    who.user)));
  }
  auto r = dispatch(store, who, request);
  if (!r) return queue::error_response(r.error());
  return queue::ok_response(*r);
}

Result<std::unique_ptr<queue::SocketServer>> start_control(const config::Config& c,
                                                           AgentStore& store) {
  auto auth = queue::make_auth_policy(c.queue.admin_group);
  if (!auth) return fail(auth.error());
  const queue::AuthPolicy policy = *auth;
  auto server = std::make_unique<queue::SocketServer>(
      c.agent.state_dir + "/" + kControlSocketName,
      [&store, policy](const queue::Principal& who, const nlohmann::json& req) {
        return handle_control(store, policy, who, req);
      });
  CARDIAC_TRY(server->start());
  return server;
}

}  // namespace cardiac::agent
