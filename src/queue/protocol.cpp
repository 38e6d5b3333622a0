// SPDX-License-Identifier: Apache-2.0
// Request and response framing of the queue socket.
#include "queue/protocol.h"

#include "core/format.h"

namespace cardiac::queue {
namespace {

constexpr std::pair<ErrorCode, std::string_view> kCodes[] = {
    {ErrorCode::kIo, "io"},
    {ErrorCode::kNotFound, "not_found"},
    {ErrorCode::kParse, "parse"},
    {ErrorCode::kInvalidArgument, "invalid"},
    {ErrorCode::kUnsupported, "unsupported"},
    {ErrorCode::kTimeout, "timeout"},
    {ErrorCode::kPermission, "permission"},
    {ErrorCode::kUnavailable, "unavailable"},
    {ErrorCode::kInternal, "internal"},
};

}  // namespace

std::string socket_path(const std::string& state_dir) {
  return state_dir + "/" + kSocketName;
}

Result<nlohmann::json> parse_request(std::string_view line) {
  if (line.size() > kMaxRequestBytes) {
    return fail(Error::invalid(
        fmt::format("request of {} bytes is over the limit of {}", line.size(), kMaxRequestBytes)));
  }
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return fail(Error::parse("request is not JSON"));
  if (!j.is_object()) return fail(Error::parse("request is not a JSON object"));
  if (!j.contains("op") || !j["op"].is_string()) {
    return fail(Error::parse("request has no \"op\" string"));
  }
  return j;
}

nlohmann::json error_response(const Error& e) {
  std::string_view code = "internal";
  for (const auto& [c, name] : kCodes) {
    if (c == e.code) code = name;
  }
  return {{"ok", false}, {"error", e.what()}, {"code", code}};
}

nlohmann::json ok_response(nlohmann::json body) {
  if (!body.is_object()) body = nlohmann::json::object();
  body["ok"] = true;
  return body;
}

Result<nlohmann::json> parse_response(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok")) {
    return fail(Error::parse("the agent's answer is not a queue response"));
  }
  if (j.value("ok", false)) return j;
  Error e;
  e.message = j.value("error", std::string("request failed"));
  std::string code = j.value("code", std::string("internal"));
  for (const auto& [c, name] : kCodes) {
    if (name == code) e.code = c;
  }
  return fail(std::move(e));
}

std::string dump_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace cardiac::queue
