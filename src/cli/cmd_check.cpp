// SPDX-License-Identifier: Apache-2.0
// `cardiac check` (the monitoring-plugin convention: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN,
// one status line, perfdata) and `cardiac npd` (node-problem-detector's custom-plugin
// contract: 0 OK, 1 problem, 2 unknown, a message within its output limit).
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/node_check.h"
#include "config/config.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::cli {
namespace {

struct CheckFlags {
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;
  std::string state_dir;
  std::string timeout = "5s";
  std::string nvml_lib;
  bool local = false;
  bool json = false;
  // npd only
  std::string condition = "gpu";
  std::size_t max_output = 80;
};

// Monitoring-plugin states.
enum PluginState : int {
  kPluginOk = 0,
  kPluginWarning = 1,
  kPluginCritical = 2,
  kPluginUnknown = 3
};

// NPD's custom-plugin exit codes (pkg/custompluginmonitor/types).
enum NpdState : int { kNpdOk = 0, kNpdProblem = 1, kNpdUnknown = 2 };

Result<NodeCheckOptions> options_from(const CheckFlags& f, const char* command) {
  auto cfg = config::load_config(f.config, f.config_named);
  if (!cfg) return fail(cfg.error());
  auto timeout = parse_duration_ns(f.timeout);
  if (!timeout || *timeout <= 0) {
    return fail(Error::invalid(
        fmt::format("{}: --timeout: not a duration: '{}' (e.g. 5s, 500ms)", command, f.timeout)));
  }
  NodeCheckOptions o;
  o.config = std::move(*cfg);
  o.state_dir = f.state_dir.empty() ? o.config.agent.state_dir : f.state_dir;
  if (f.state_dir.empty()) {
    if (const char* env = std::getenv("CARDIAC_STATE_DIR"); env && *env) o.state_dir = env;
  }
  o.timeout = *timeout;
  o.use_agent = !f.local;
  o.nvml_lib = f.nvml_lib;
  return o;
}

int plugin_state(const NodeCheck& c) {
  if (!c.level) return kPluginUnknown;
  switch (*c.level) {
    case health::Level::kOk:
      return kPluginOk;
    case health::Level::kWarn:
      return kPluginWarning;
    case health::Level::kFail:
      return kPluginCritical;
  }
  return kPluginUnknown;
}

std::string_view plugin_state_name(int s) {
  switch (s) {
    case kPluginOk:
      return "OK";
    case kPluginWarning:
      return "WARNING";
    case kPluginCritical:
      return "CRITICAL";
    default:
      return "UNKNOWN";
  }
}

std::string_view level_word(health::Level l) {
  return l == health::Level::kFail ? "critical" : "warning";
}

nlohmann::json to_json(const NodeCheck& c, int state) {
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : c.problems) {
    nlohmann::json j{
        {"severity", level_word(p.level)}, {"code", p.code}, {"text", p.text}, {"xid", p.xid}};
    j["gpu"] = p.gpu ? nlohmann::json(*p.gpu) : nlohmann::json(nullptr);
    problems.push_back(std::move(j));
  }
  nlohmann::json j{{"status", plugin_state_name(state)},
                   {"exit_code", state},
                   {"source", c.source},
                   {"gpus", c.gpus},
                   {"gpus_ok", c.gpus_ok},
                   {"problems", std::move(problems)},
                   {"notes", c.notes}};
  if (!c.level) j["unknown"] = c.unknown;
  return j;
}

int run_check(const CheckFlags& f, Context& ctx) {
  auto o = options_from(f, "cardiac check");
  if (!o) {
    // A monitor must not read a broken configuration as a healthy node: UNKNOWN.
    ctx.out << "CARDIAC UNKNOWN - " << o.error().what() << "\n";
    return kPluginUnknown;
  }
  NodeCheck c = check_node(*o, ctx.clock);
  const int state = plugin_state(c);
  if (f.json) {
    ctx.out << to_json(c, state).dump(2) << "\n";
    return state;
  }
  // First line: the state and the worst problem, then perfdata; later lines: every problem and
  // note (monitoring systems keep them as the long output).
  ctx.out << fmt::format("CARDIAC {} - {} ({}) | gpus={};;;0 gpus_ok={};;;0 problems={};;;0\n",
                         plugin_state_name(state), summary_line(c), c.source, c.gpus, c.gpus_ok,
                         c.problems.size());
  for (const auto& p : c.problems) ctx.out << level_word(p.level) << ": " << p.text << "\n";
  for (const auto& n : c.notes) ctx.out << "note: " << n << "\n";
  return state;
}

int run_npd(const CheckFlags& f, Context& ctx) {
  auto o = options_from(f, "cardiac npd");
  NodeCheck view;
  if (!o) {
    view.unknown = o.error().what();
    ctx.out << summary_line(view, f.max_output) << "\n";
    return kNpdUnknown;
  }
  const NodeCheck c = check_node(*o, ctx.clock);
  const bool xid = f.condition == "xid";
  view.source = c.source;
  view.gpus = c.gpus;
  view.gpus_ok = c.gpus_ok;
  if (!c.level) {
    view.unknown = c.unknown;
  } else if (xid && !starts_with(c.source, "agent")) {
    // Only the agent reads the kernel log: without it the condition cannot be judged.
    view.unknown =
        "Xids are read by the agent only: " + (c.notes.empty() ? c.source : c.notes.front());
  } else {
    for (const auto& p : c.problems) {
      if (xid ? p.xid : p.level == health::Level::kFail) view.problems.push_back(p);
    }
    view.level = view.problems.empty() ? health::Level::kOk : health::Level::kFail;
  }
  if (!view.level) {
    ctx.out << summary_line(view, f.max_output) << "\n";
    return kNpdUnknown;
  }
  if (view.problems.empty()) {
    // The message NPD shows beside the condition while it is false.
    ctx.out << fit_message(xid ? std::string("no Xid fault firing")
                               : fmt::format("no critical GPU fault ({} GPUs)", c.gpus),
                           f.max_output)
            << "\n";
    return kNpdOk;
  }
  ctx.out << summary_line(view, f.max_output) << "\n";
  return kNpdProblem;
}

void common_flags(CLI::App& sub, CheckFlags& f) {
  sub.add_option("--config", f.config, "Configuration file (the agent's address, NVML library)")
      ->capture_default_str();
  sub.add_option("--state-dir", f.state_dir, "The agent's state directory (for its API token)");
  sub.add_option("--timeout", f.timeout,
                 "Deadline for the agent's answers and for each NVML answer")
      ->capture_default_str();
  sub.add_option("--nvml-lib", f.nvml_lib, "NVML library for a local sample");
  sub.add_flag("--local", f.local, "Sample this machine even when an agent runs");
}

}  // namespace

Runner register_check(CLI::App& sub) {
  auto f = std::make_shared<CheckFlags>();
  common_flags(sub, *f);
  sub.add_flag("--json", f->json, "JSON output (the exit code is the same)");
  return [f, &sub](Context& ctx) {
    f->config_named = sub.count("--config") > 0;
    return run_check(*f, ctx);
  };
}

Runner register_npd(CLI::App& sub) {
  auto f = std::make_shared<CheckFlags>();
  common_flags(sub, *f);
  sub.add_option("--condition", f->condition,
                 "gpu: a critical GPU fault (GPUUnhealthy); xid: a kernel-log Xid fault firing "
                 "(GPUXid)")
      ->check(CLI::IsMember({"gpu", "xid"}))
      ->capture_default_str();
  sub.add_option("--max-output", f->max_output,
                 "Longest message in bytes (node-problem-detector's max_output_length)")
      ->check(CLI::Range(8, 4096))
      ->capture_default_str();
  return [f, &sub](Context& ctx) {
    f->config_named = sub.count("--config") > 0;
    return run_npd(*f, ctx);
  };
}

}  // namespace cardiac::cli
