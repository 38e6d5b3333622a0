// SPDX-License-Identifier: Apache-2.0
// The agent's control socket.
#include "agent/control.h"

#include <unistd.h>

#include <vector>

#include "alerts/alert_json.h"
#include "core/format.h"
#include "core/log.h"
#include "queue/protocol.h"
#include "server/params.h"
#include "store/incident_json.h"

namespace cardiac::agent {
namespace {

using store::incident_json;

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

// A remediation of an incident: the action by name, the caller's user as who did it.
Result<nlohmann::json> remediate(AgentStore& store, const std::string& recorded,
                                 const nlohmann::json& req, const Clock& clock) {
  auto id = req.find("id");
  if (id == req.end() || !id->is_number_integer() || id->get<std::int64_t>() < 0) {
    return fail(Error::invalid("id must be a non-negative integer", "id"));
  }
  auto action_name = string_member(req, "action", true);
  if (!action_name) return fail(action_name.error());
  auto action = store::remediation_action_from_name(*action_name);
  if (!action) return fail(action.error().with_context("action"));
  auto note = string_member(req, "note", false);
  if (!note) return fail(note.error());
  const store::Remediation r{*action, *note, recorded, clock.now()};
  auto done = store.with([&](AgentStore::Access& s) -> Result<store::Incident> {
    CARDIAC_TRY(store::add_remediation(s.db, id->get<std::int64_t>(), r));
    return store::incident_by_id(s.db, id->get<std::int64_t>());
  });
  if (!done) return fail(done.error());
  log::info("incident {}: {} recorded by {}{}", done->id, *action_name, recorded,
            note->empty() ? "" : ": " + *note);
  return nlohmann::json{{"incident", incident_json(*done)}};
}

Result<nlohmann::json> dispatch(AgentStore& store, const queue::Principal& who,
                                const nlohmann::json& req, const Clock& clock) {
  std::string op = req.value("op", std::string());
  if (op != "alerts.ack" && op != "alerts.silence" && op != "incidents.remediate") {
    return fail(Error::invalid(fmt::format("unknown op '{}'", op), "op"));
  }
  auto by = string_member(req, "by", false);
  if (!by) return fail(by.error());
  std::string recorded = by->empty() ? who.user : fmt::format("{} (says {})", who.user, *by);
  if (op == "incidents.remediate") return remediate(store, recorded, req, clock);
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
                              const queue::Principal& who, const nlohmann::json& request,
                              const Clock& clock) {
  if (!queue::is_admin(policy, who)) {
    return queue::error_response(denied(fmt::format(
        "{} may not change alerts or incidents: only root, the agent's user and members of [queue] "
        "admin_group may",
        who.user)));
  }
  auto r = dispatch(store, who, request, clock);
  if (!r) return queue::error_response(r.error());
  return queue::ok_response(*r);
}

Result<std::unique_ptr<queue::SocketServer>> start_control(const config::Config& c,
                                                           AgentStore& store, const Clock& clock) {
  auto auth = queue::make_auth_policy(c.queue.admin_group);
  if (!auth) return fail(auth.error());
  const queue::AuthPolicy policy = *auth;
  auto server = std::make_unique<queue::SocketServer>(
      c.agent.state_dir + "/" + kControlSocketName,
      [&store, policy, &clock](const queue::Principal& who, const nlohmann::json& req) {
        return handle_control(store, policy, who, req, clock);
      });
  CARDIAC_TRY(server->start());
  return server;
}

}  // namespace cardiac::agent
