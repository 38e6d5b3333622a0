// SPDX-License-Identifier: Apache-2.0
#include "top/snapshot.h"

#include <algorithm>

#include "core/strings.h"

namespace cardiac::top {
namespace {

using nlohmann::json;

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<double> number_of(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool bool_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::int64_t int_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

std::vector<Reason> reasons_of(const json& v) {
  std::vector<Reason> out;
  auto it = v.find("reasons");
  if (it == v.end() || !it->is_array()) return out;
  for (const auto& r : *it) {
    if (!r.is_object()) continue;
    out.push_back({text_of(r, "level"), text_of(r, "code"), text_of(r, "text")});
  }
  return out;
}

std::optional<unsigned> gpu_index(const json& v) {
  if (v.is_number_unsigned()) return v.get<unsigned>();
  if (v.is_string()) {
    if (auto n = parse_u64(v.get<std::string>()); n && *n < 1024) return static_cast<unsigned>(*n);
  }
  return std::nullopt;
}

ProcessInfo process_of(const json& p, unsigned gpu) {
  ProcessInfo out;
  out.gpu = gpu;
  out.pid = static_cast<std::uint64_t>(std::max<std::int64_t>(0, int_of(p, "pid")));
  out.type = text_of(p, "type");
  out.name = text_of(p, "name");
  const std::string job = text_of(p, "job");
  if (!job.empty()) {
    const std::string source = text_of(p, "job_source");
    out.job = source.empty() ? job : source + " " + job;
  }
  if (auto m = number_of(p, "used_memory_bytes"); m && *m >= 0) {
    out.memory = static_cast<std::uint64_t>(*m);
  }
  return out;
}

GpuInfo gpu_of(const json& g) {
  GpuInfo out;
  auto index = g.find("index");
  out.index = index == g.end() ? 0 : gpu_index(*index).value_or(0);
  out.name = text_of(g, "name");
  if (out.name.starts_with("NVIDIA ")) out.name.erase(0, 7);
  out.bus_id = text_of(g, "pci_bus_id");
  out.health = text_of(g, "health");
  if (out.health.empty()) out.health = "ok";
  out.health_detail = text_of(g, "health_detail");
  out.verdict = text_of(g, "verdict");
  out.reasons = reasons_of(g);
  out.util = number_of(g, "utilization_gpu");
  out.mem_used = number_of(g, "memory_used");
  out.mem_total = number_of(g, "memory_total");
  out.temp = number_of(g, "temperature");
  out.temp_slowdown = number_of(g, "temperature_slowdown");
  if (auto p = number_of(g, "power_usage_mw")) out.power = *p / 1000.0;
  if (auto p = number_of(g, "power_limit_mw")) out.power_limit = *p / 1000.0;
  if (auto names = g.find("clock_event_reason_names"); names != g.end() && names->is_array()) {
    std::vector<std::string> all;
    for (const auto& n : *names) {
      if (n.is_string()) all.push_back(n.get<std::string>());
    }
    auto has = [&](std::string_view n) {
      return std::find(all.begin(), all.end(), n) != all.end();
    };
    std::vector<std::string> shown;
    for (const auto& n : all) {
      if (n == "gpu_idle") continue;
      // HW slowdown is named once, by its cause, when the cause is known.
      if (n == "hw_slowdown" && (has("hw_thermal_slowdown") || has("hw_power_brake_slowdown"))) {
        continue;
      }
      std::string brief = throttle_brief(n);
      if (std::find(shown.begin(), shown.end(), brief) == shown.end()) shown.push_back(brief);
    }
    out.idle = has("gpu_idle");
    out.throttle = std::move(shown);
  }
  if (auto procs = g.find("processes"); procs != g.end() && procs->is_array()) {
    for (const auto& p : *procs) {
      if (p.is_object()) out.processes.push_back(process_of(p, out.index));
    }
  }
  out.sampled_at = int_of(g, "sampled_at_ns");
  return out;
}

}  // namespace

std::string throttle_brief(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kBrief[] = {
      {"gpu_idle", "idle"},
      {"applications_clocks_setting", "app_clocks"},
      {"sw_power_cap", "sw_power"},
      {"hw_slowdown", "hw_slow"},
      {"sync_boost", "sync_boost"},
      {"sw_thermal_slowdown", "sw_thermal"},
      {"hw_thermal_slowdown", "hw_thermal"},
      {"hw_power_brake_slowdown", "hw_brake"},
      {"display_clock_setting", "display"},
  };
  for (const auto& [long_name, brief] : kBrief) {
    if (name == long_name) return std::string(brief);
  }
  return "other";
}

Snapshot from_status_json(const json& status) {
  Snapshot s;
  if (!status.is_object()) {
    s.message = "the status is not a JSON object";
    return s;
  }
  s.verdict = text_of(status, "verdict");
  if (s.verdict == "UNKNOWN") s.verdict.clear();
  s.message = text_of(status, "message");
  if (auto nvml = status.find("nvml"); nvml != status.end() && nvml->is_object()) {
    auto available = nvml->find("available");
    if (available != nvml->end() && available->is_boolean() && !available->get<bool>() &&
        s.message.empty()) {
      s.message = "NVML unavailable: " + text_of(*nvml, "error");
    }
  }
  if (auto inv = status.find("inventory"); inv != status.end() && inv->is_object()) {
    s.inventory = reasons_of(*inv);
  }
  if (auto host = status.find("host"); host != status.end() && host->is_object()) {
    s.host_reasons = reasons_of(*host);
    if (auto sys = host->find("system"); sys != host->end() && sys->is_object()) {
      s.host = text_of(*sys, "hostname");
    }
  }
  if (auto gpus = status.find("gpus"); gpus != status.end() && gpus->is_array()) {
    for (const auto& g : *gpus) {
      if (g.is_object()) s.gpus.push_back(gpu_of(g));
    }
  }
  for (const auto& g : s.gpus) s.taken_at = std::max(s.taken_at, g.sampled_at);
  return s;
}

std::vector<AlertInfo> alerts_from_json(const json& alerts) {
  std::vector<AlertInfo> out;
  if (!alerts.is_array()) return out;
  for (const auto& a : alerts) {
    if (!a.is_object()) continue;
    AlertInfo x;
    x.state = text_of(a, "state");
    if (x.state != "firing" && x.state != "pending") continue;
    x.id = int_of(a, "id");
    x.rule = text_of(a, "rule");
    x.severity = text_of(a, "severity");
    x.description = text_of(a, "description");
    if (auto labels = a.find("labels"); labels != a.end() && labels->is_object()) {
      if (auto g = labels->find("gpu"); g != labels->end()) x.gpu = gpu_index(*g);
    }
    x.since = x.state == "firing" ? int_of(a, "fired_ns") : int_of(a, "started_ns");
    x.silenced = bool_of(a, "silenced");
    x.acked = a.find("acked_ns") != a.end() && a["acked_ns"].is_number();
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<JobInfo> jobs_from_json(const json& queue) {
  std::vector<JobInfo> out;
  auto jobs = queue.is_object() ? queue.find("jobs") : queue.end();
  if (!queue.is_object() || jobs == queue.end() || !jobs->is_array()) return out;
  for (const auto& j : *jobs) {
    if (!j.is_object()) continue;
    JobInfo x;
    x.id = int_of(j, "id");
    x.user = text_of(j, "user");
    x.name = text_of(j, "name");
    x.state = text_of(j, "state");
    x.gpus = static_cast<unsigned>(std::max<std::int64_t>(0, int_of(j, "gpus")));
    x.priority = static_cast<int>(int_of(j, "priority"));
    if (auto idx = j.find("gpu_indices"); idx != j.end() && idx->is_array()) {
      for (const auto& i : *idx) {
        if (auto g = gpu_index(i)) x.gpu_indices.push_back(*g);
      }
    }
    // What `cardiac queue` shows: the scheduler's why for a waiting job, else the reason.
    x.reason = text_of(j, "why");
    if (x.reason.empty()) x.reason = text_of(j, "reason");
    const bool waiting = x.state == "pending" || x.state == "held";
    x.since = waiting ? int_of(j, "submit_ns") : int_of(j, "start_ns");
    if (x.since == 0) x.since = int_of(j, "submit_ns");
    out.push_back(std::move(x));
  }
  return out;
}

std::string blocked_from_json(const json& queue) {
  return queue.is_object() ? text_of(queue, "blocked") : std::string();
}

std::optional<unsigned> uid_from_proc_status(std::string_view text) {
  for (auto line : split_lines(text)) {
    if (!starts_with(line, "Uid:")) continue;
    auto fields = split_ws(line.substr(4));
    if (fields.empty()) return std::nullopt;
    auto uid = parse_u64(fields[0]);
    if (!uid || *uid > 0xFFFFFFFFULL) return std::nullopt;
    return static_cast<unsigned>(*uid);
  }
  return std::nullopt;
}

}  // namespace cardiac::top
