// SPDX-License-Identifier: Apache-2.0
// Job states, JSON forms, and the parsers for sizes, time limits and submit requests.
#include "queue/job.h"

#include <array>
#include <cmath>
#include <utility>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"

namespace cardiac::queue {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 8> kStates = {{
    {JobState::kPending, "pending"},
    {JobState::kHeld, "held"},
    {JobState::kRunning, "running"},
    {JobState::kCompleted, "completed"},
    {JobState::kFailed, "failed"},
    {JobState::kTimeout, "timeout"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kLost, "lost"},
}};

template <class T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json opt_time(const std::optional<TimeNs>& t) {
  return t ? nlohmann::json(format_iso8601(*t)) : nlohmann::json();
}

constexpr unsigned kMaxGpus = 1024;
constexpr int kMaxPriority = 1000;
constexpr std::size_t kMaxArgs = 4096;
constexpr std::size_t kMaxName = 128;

}  // namespace

std::string_view job_state_name(JobState s) {
  for (const auto& [state, name] : kStates) {
    if (state == s) return name;
  }
  return "unknown";
}

std::optional<JobState> parse_job_state(std::string_view s) {
  for (const auto& [state, name] : kStates) {
    if (name == s) return state;
  }
  return std::nullopt;
}

bool is_terminal(JobState s) {
  return s != JobState::kPending && s != JobState::kHeld && s != JobState::kRunning;
}

std::string_view stop_action_name(StopAction a) {
  switch (a) {
    case StopAction::kCancel:
      return "cancel";
    case StopAction::kRequeue:
      return "requeue";
    case StopAction::kNone:
      break;
  }
  return "";
}

StopAction parse_stop_action(std::string_view s) {
  if (s == "cancel") return StopAction::kCancel;
  if (s == "requeue") return StopAction::kRequeue;
  return StopAction::kNone;
}

nlohmann::json to_json(const Job& j, bool detail) {
  nlohmann::json out{{"id", j.id},
                     {"state", job_state_name(j.state)},
                     {"user", j.user},
                     {"uid", j.uid},
                     {"name", j.name},
                     {"argv", j.argv},
                     {"gpus", j.gpus},
                     {"gpu_mem", j.gpu_mem},
                     {"shared", j.shared},
                     {"priority", j.priority},
                     {"time_limit_seconds", static_cast<double>(j.time_limit) / 1e9},
                     {"after", j.after},
                     {"submitted", format_iso8601(j.submit_ns)},
                     {"submit_ns", j.submit_ns},
                     {"first_started", opt_time(j.first_start_ns)},
                     {"started", opt_time(j.start_ns)},
                     {"start_ns", opt_json(j.start_ns)},
                     {"ended", opt_time(j.end_ns)},
                     {"end_ns", opt_json(j.end_ns)},
                     {"exit_code", opt_json(j.exit_code)},
                     {"signal", opt_json(j.signal)},
                     {"gpu_indices", j.gpu_indices},
                     {"gpu_uuids", j.gpu_uuids},
                     {"attempt", j.attempt},
                     {"restarts", j.restarts},
                     {"reason", j.reason},
                     {"eligible", opt_time(j.eligible_ns)}};
  if (!j.account.empty()) out["account"] = j.account;
  if (detail) {
    out["cwd"] = j.cwd;
    out["gid"] = j.gid;
    out["groups"] = j.groups;
    out["runner_pid"] = opt_json(j.runner_pid);
    out["not_before"] =
        j.not_before_ns > 0 ? nlohmann::json(format_iso8601(j.not_before_ns)) : nlohmann::json();
    out["stop_action"] = stop_action_name(j.stop_action);
  }
  return out;
}

nlohmann::json to_json(const Attempt& a) {
  return {{"attempt", a.attempt},
          {"started", format_iso8601(a.start_ns)},
          {"ended", opt_time(a.end_ns)},
          {"gpu_indices", a.gpu_indices},
          {"gpu_uuids", a.gpu_uuids},
          {"exit_code", opt_json(a.exit_code)},
          {"signal", opt_json(a.signal)},
          {"outcome", a.outcome},
          {"reason", a.reason}};
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string_view t = trim(text);
  std::size_t digits = 0;
  while (digits < t.size() &&
         (std::isdigit(static_cast<unsigned char>(t[digits])) != 0 || t[digits] == '.')) {
    ++digits;
  }
  auto number = parse_double(t.substr(0, digits));
  std::string unit = to_lower(trim(t.substr(digits)));
  double mul = 0;
  if (unit.empty() || unit == "b") {
    mul = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    mul = 1024.0;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    mul = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    mul = 1024.0 * 1024 * 1024;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    mul = 1024.0 * 1024 * 1024 * 1024;
  }
  if (!number || digits == 0 || mul == 0 || *number < 0) {
    return fail(Error::invalid(fmt::format(
        "not a size: '{}' (examples: 20G, 512M, 80GiB; units are powers of 1024)", text)));
  }
  double bytes = *number * mul;
  if (bytes >= 1.8e19) return fail(Error::invalid(fmt::format("size too large: '{}'", text)));
  return static_cast<std::uint64_t>(std::llround(bytes));
}

Result<DurationNs> parse_time_limit(std::string_view text) {
  auto d = parse_duration_ns(trim(text));
  if (!d || *d <= 0) {
    return fail(Error::invalid(
        fmt::format("not a time limit: '{}' (examples: 2h, 90m, 1h30m, 45s)", text)));
  }
  return *d;
}

nlohmann::json to_json(const SubmitRequest& r) {
  return {{"argv", r.argv},     {"env", r.env},           {"cwd", r.cwd},
          {"name", r.name},     {"gpus", r.gpus},         {"gpu_mem", r.gpu_mem},
          {"shared", r.shared}, {"priority", r.priority}, {"time_limit_ns", r.time_limit},
          {"after", r.after},   {"account", r.account}};
}

Result<SubmitRequest> parse_submit(const nlohmann::json& j) {
  if (!j.is_object()) return fail(Error::parse("submit: expected an object"));
  SubmitRequest r;
  auto bad = [](std::string_view field, std::string_view what) {
    return fail(Error::invalid(fmt::format("{}: {}", field, what)));
  };
  try {
    if (!j.contains("argv") || !j["argv"].is_array() || j["argv"].empty()) {
      return bad("argv", "no command given");
    }
    if (j["argv"].size() > kMaxArgs) return bad("argv", "too many arguments");
    for (const auto& a : j["argv"]) {
      if (!a.is_string()) return bad("argv", "every argument must be a string");
      r.argv.push_back(a.get<std::string>());
    }
    if (r.argv[0].empty()) return bad("argv", "the command is empty");
    if (j.contains("env")) {
      if (!j["env"].is_object()) return bad("env", "expected an object");
      for (const auto& [k, v] : j["env"].items()) {
        if (!v.is_string() || k.empty() || k.find('=') != std::string::npos) {
          return bad("env", fmt::format("bad variable '{}'", k));
        }
        r.env[k] = v.get<std::string>();
      }
    }
    r.cwd = j.value("cwd", std::string("/"));
    if (r.cwd.empty() || r.cwd[0] != '/') return bad("cwd", "must be an absolute path");
    r.name = j.value("name", std::string());
    if (r.name.size() > kMaxName) return bad("name", "longer than 128 characters");
    r.account = j.value("account", std::string());
    if (r.account.size() > kMaxName) return bad("account", "longer than 128 characters");
    auto gpus = j.value("gpus", std::int64_t{1});
    if (gpus < 1 || gpus > kMaxGpus) return bad("gpus", "must be between 1 and 1024");
    r.gpus = static_cast<unsigned>(gpus);
    auto mem = j.value("gpu_mem", std::int64_t{0});
    if (mem < 0) return bad("gpu_mem", "must not be negative");
    r.gpu_mem = static_cast<std::uint64_t>(mem);
    r.shared = j.value("shared", false);
    auto prio = j.value("priority", std::int64_t{0});
    if (prio < -kMaxPriority || prio > kMaxPriority) {
      return bad("priority", "must be between -1000 and 1000");
    }
    r.priority = static_cast<int>(prio);
    r.time_limit = j.value("time_limit_ns", std::int64_t{0});
    if (r.time_limit < 0) return bad("time_limit_ns", "must not be negative");
    if (j.contains("after")) {
      if (!j["after"].is_array()) return bad("after", "expected a list of job ids");
      for (const auto& a : j["after"]) {
        if (!a.is_number_integer() || a.get<std::int64_t>() <= 0) {
          return bad("after", "job ids are positive integers");
        }
        r.after.push_back(a.get<JobId>());
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::invalid(fmt::format("submit: {}", e.what())));
  }
  return r;
}

}  // namespace cardiac::queue
