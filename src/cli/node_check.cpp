// SPDX-License-Identifier: Apache-2.0
// The node check behind `cardiac check` and `cardiac npd`: the agent's view when it has one,
// else a local sample.
#include "cli/node_check.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include <httplib.h>

#include "config/agent_config.h"
#include "core/format.h"
#include "core/strings.h"
#include "health/faults.h"
#include "health/report.h"
#include "host/bounded.h"
#include "platform/fs.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::cli {
namespace {

std::string text_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<health::Level> level_from(std::string_view name) {
  if (name == "FAIL") return health::Level::kFail;
  if (name == "WARN") return health::Level::kWarn;
  if (name == "OK") return health::Level::kOk;
  return std::nullopt;
}

// Every non-OK reason of one verdict object ({"verdict", "reasons": [{level, code, text}]}).
void add_reasons(const nlohmann::json& v, const std::string& who, std::optional<unsigned> gpu,
                 std::vector<NodeProblem>& out) {
  auto reasons = v.find("reasons");
  if (reasons == v.end() || !reasons->is_array()) return;
  for (const auto& r : *reasons) {
    auto level = level_from(text_of(r, "level"));
    if (!level || *level == health::Level::kOk) continue;
    NodeProblem p;
    p.level = *level;
    p.code = text_of(r, "code");
    p.text = who.empty() ? text_of(r, "text") : who + ": " + text_of(r, "text");
    p.gpu = gpu;
    out.push_back(std::move(p));
  }
}

// Alerts of the kernel-log fault classes ("gpu_fallen_off_bus", "nvswitch_sxid_fatal", …).
bool is_xid_rule(std::string_view rule) {
  for (const auto& c : health::fault_classes()) {
    if (rule == fmt::format("gpu_{}", c.name) || rule == fmt::format("nvswitch_{}", c.name)) {
      return true;
    }
  }
  return false;
}

std::string why_no_answer(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "nothing listens there";
    case httplib::Error::ConnectionTimeout:
      return "no connection within the timeout";
    case httplib::Error::Read:
      return "no answer within the timeout";
    default:
      return httplib::to_string(e);
  }
}

// The agent's answer, or why there is none (then the caller samples locally).
Result<NodeCheck> ask_agent(const NodeCheckOptions& o) {
  auto ep = config::agent_address(o.config.agent.listen);
  if (!ep)
    return fail(Error::invalid("agent.listen '" + o.config.agent.listen + "' is not host:port"));
  const std::string where = fmt::format("{}:{}", ep->host, ep->port);
  if (!o.config.agent.tls_cert.empty()) {
    return fail(Error::unavailable("the agent at " + where +
                                   " serves TLS only; this check reads it over plain HTTP"));
  }
  httplib::Client cli(ep->host, ep->port);
  const auto secs = static_cast<time_t>(o.timeout / kNsPerSec);
  const auto usecs = static_cast<time_t>((o.timeout % kNsPerSec) / 1000);
  cli.set_connection_timeout(secs, usecs);
  cli.set_read_timeout(secs, usecs);
  cli.set_write_timeout(secs, usecs);
  const std::string token = config::agent_client_token(o.config.agent, o.state_dir);
  if (!token.empty()) cli.set_bearer_token_auth(token);

  auto health = cli.Get("/healthz");
  if (!health) {
    return fail(Error::unavailable(
        fmt::format("no agent answers at {}: {}", where, why_no_answer(health.error()))));
  }
  // Stalled or not started sampling: its verdicts are old or absent, so look for ourselves.
  // NVML unusable is a verdict the agent's status carries.
  if (health->status != 200 && !starts_with(health->body, "NVML unavailable")) {
    return fail(Error::unavailable(
        fmt::format("the agent at {} is not sampling: {}", where, trim(health->body))));
  }
  auto status = cli.Get("/api/v1/status");
  auto alerts = cli.Get("/api/v1/alerts");
  for (const auto* r : {&status, &alerts}) {
    if (!*r) {
      return fail(Error::unavailable(
          fmt::format("the agent at {} did not answer: {}", where, why_no_answer(r->error()))));
    }
    if ((*r)->status != 200) {
      return fail(Error::unavailable(
          fmt::format("the agent at {} answered {} {}", where, (*r)->status, trim((*r)->body))));
    }
  }
  auto sj = nlohmann::json::parse(status->body, nullptr, false);
  auto aj = nlohmann::json::parse(alerts->body, nullptr, false);
  if (sj.is_discarded() || !sj.is_object() || aj.is_discarded() || !aj.is_array()) {
    return fail(Error::parse("the agent at " + where + " answered something that is not its API"));
  }
  if (!level_from(text_of(sj, "verdict"))) {
    // Started but not sampled yet: a sample of our own answers now.
    return fail(
        Error::unavailable(fmt::format("the agent at {}: {}", where, text_of(sj, "message"))));
  }
  NodeCheck c = judge_status_json(sj, aj);
  c.source = "agent " + where;
  return c;
}

NodeCheck sample_locally(const NodeCheckOptions& o, const Clock& clock) {
  auto fs = std::make_shared<RootFs>(o.config.host.root);
  telemetry::GpuCollectorOptions copts;
  copts.nvml_lib = o.nvml_lib.empty() ? o.config.nvml.library : o.nvml_lib;
  copts.timeout = o.timeout;
  telemetry::GpuCollector collector(copts, clock);
  nvml::GpuSnapshot gpus = collector.sample();
  health::name_gpu_processes(*fs, gpus);
  host::HostSnapshot h;
  if (auto snap = host::collect_host_within(fs, clock.now(), o.timeout)) {
    h = std::move(*snap);
  } else {
    h.taken_at = clock.now();
    h.timed_out = true;
  }
  auto report = health::build_report(std::move(gpus), std::move(h), nullptr);
  NodeCheck c = judge_status_json(health::to_json(report), nlohmann::json::array());
  c.source = "local sample";
  c.notes.emplace_back("kernel-log faults (Xids) are seen only by a running agent");
  return c;
}

}  // namespace

NodeCheck judge_status_json(const nlohmann::json& status, const nlohmann::json& alerts) {
  NodeCheck c;
  const std::string verdict = text_of(status, "verdict");
  auto overall = level_from(verdict);
  if (!overall) {
    c.unknown = text_of(status, "message");
    if (c.unknown.empty()) c.unknown = "the status has no verdict";
    return c;
  }
  if (auto inv = status.find("inventory"); inv != status.end())
    add_reasons(*inv, "", {}, c.problems);
  if (auto gpus = status.find("gpus"); gpus != status.end() && gpus->is_array()) {
    for (const auto& g : *gpus) {
      const auto index = g.value("index", 0u);
      const std::string bus = text_of(g, "pci_bus_id");
      ++c.gpus;
      if (text_of(g, "verdict") == "OK") ++c.gpus_ok;
      add_reasons(
          g, bus.empty() ? fmt::format("GPU {}", index) : fmt::format("GPU {} ({})", index, bus),
          index, c.problems);
    }
  }
  if (auto host = status.find("host"); host != status.end())
    add_reasons(*host, "host", {}, c.problems);
  if (alerts.is_array()) {
    for (const auto& a : alerts) {
      if (text_of(a, "state") != "firing" || a.value("silenced", false)) continue;
      const std::string severity = text_of(a, "severity");
      if (severity != "critical" && severity != "warning") continue;
      NodeProblem p;
      p.level = severity == "critical" ? health::Level::kFail : health::Level::kWarn;
      p.code = text_of(a, "rule");
      p.text = text_of(a, "description");
      if (p.text.empty()) p.text = p.code;
      if (auto labels = a.find("labels"); labels != a.end() && labels->is_object()) {
        if (auto gpu = parse_u64(text_of(*labels, "gpu")); gpu && *gpu < 1024) {
          p.gpu = static_cast<unsigned>(*gpu);
        }
      }
      p.xid = is_xid_rule(p.code);
      c.problems.push_back(std::move(p));
    }
  }
  // The GPUs could not be looked at: unknown, unless that is a finding (NVML present but
  // failing, GPUs on the bus without a driver): then the inventory's FAIL says so.
  auto nvml = status.find("nvml");
  const bool available = nvml == status.end() || nvml->value("available", true);
  const std::string kind = nvml == status.end() ? "" : text_of(*nvml, "error_kind");
  std::stable_sort(c.problems.begin(), c.problems.end(),
                   [](const NodeProblem& a, const NodeProblem& b) { return a.level > b.level; });
  if (!available && kind != "unresponsive" && c.problems.empty()) {
    c.unknown = "NVML unavailable (" + kind + "): " + text_of(*nvml, "error");
    return c;
  }
  c.level = c.problems.empty() ? health::Level::kOk : c.problems.front().level;
  return c;
}

NodeCheck check_node(const NodeCheckOptions& o, const Clock& clock) {
  std::string why;
  if (o.use_agent) {
    auto a = ask_agent(o);
    if (a) return *a;
    why = a.error().what();
  }
  NodeCheck c = sample_locally(o, clock);
  if (!why.empty()) c.notes.insert(c.notes.begin(), why);
  return c;
}

nlohmann::json npd_config(const std::string& path, const std::string& interval,
                          const std::string& timeout, std::size_t max_output) {
  // NPD sets a condition True while its problem holds, so each type names the problem.
  auto rule = [&](const char* condition, const char* reason, const char* which) {
    return nlohmann::json{{"type", "permanent"},
                          {"condition", condition},
                          {"reason", reason},
                          {"path", path},
                          // A local sample's NVML deadline well inside NPD's own.
                          {"args",
                           {"npd", "--condition", which, "--max-output", std::to_string(max_output),
                            "--timeout", "2s"}},
                          {"timeout", timeout}};
  };
  return {{"plugin", "custom"},
          {"pluginConfig",
           {{"invoke_interval", interval},
            {"timeout", timeout},
            {"max_output_length", max_output},
            {"concurrency", 2},
            {"enable_message_change_based_condition_update", false}}},
          {"source", "cardiac-gpu"},
          {"metricsReporting", true},
          {"conditions",
           {{{"type", "GPUUnhealthy"},
             {"reason", "NoCriticalGPUFault"},
             {"message", "no critical GPU fault"}},
            {{"type", "GPUXid"}, {"reason", "NoXidFault"}, {"message", "no Xid fault firing"}}}},
          {"rules",
           {rule("GPUUnhealthy", "CriticalGPUFault", "gpu"), rule("GPUXid", "XidFault", "xid")}}};
}

std::string summary_line(const NodeCheck& c, std::size_t max) {
  std::string s;
  if (!c.level) {
    s = c.unknown;
  } else if (c.problems.empty()) {
    s = c.gpus == 0 ? "no GPU problem found" : fmt::format("{} GPUs OK", c.gpus);
  } else {
    s = c.problems.front().text;
    if (c.problems.size() > 1) {
      s += fmt::format("; {} more problem{}", c.problems.size() - 1,
                       c.problems.size() == 2 ? "" : "s");
    }
  }
  return fit_message(std::move(s), max);
}

std::string fit_message(std::string s, std::size_t max) {
  if (max == 0 || s.size() <= max) return s;
  const std::string ellipsis = "…";
  if (max <= ellipsis.size()) return s.substr(0, max);
  std::size_t cut = max - ellipsis.size();
  // Back up to the start of a UTF-8 sequence: never half a character.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + ellipsis;
}

}  // namespace cardiac::cli
