// SPDX-License-Identifier: Apache-2.0
// `cardiac slurm healthcheck|prolog|epilog`: Slurm's HealthCheckProgram, Prolog and Epilog
// (docs/slurm.md). The node's health comes from the agent (else a local sample, as `cardiac
// check`); what to do about it from slurm/plan.h; Slurm is changed through scontrol only.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "agent/notifiers.h"
#include "cli/commands.h"
#include "cli/node_check.h"
#include "config/agent_config.h"
#include "config/config.h"
#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "slurm/plan.h"
#include "slurm/reason.h"
#include "slurm/scontrol.h"
#include "slurm/xids.h"

namespace cardiac::cli {
namespace {

struct SlurmFlags {
  std::string config = config::kDefaultConfigPath;
  bool config_named = false;
  std::string state_dir;
  std::string timeout = "1s";
  std::string nvml_lib;
  std::string node;
  std::string scontrol;
  std::string job;
  std::string gpus;
  bool local = false;
  bool json = false;
  bool dry_run = false;
};

enum class Hook { kHealthcheck, kProlog, kEpilog };

std::string_view hook_name(Hook h) {
  switch (h) {
    case Hook::kHealthcheck:
      return "healthcheck";
    case Hook::kProlog:
      return "prolog";
    case Hook::kEpilog:
      return "epilog";
  }
  return "";
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// SLURMD_NODENAME (set by slurmd for every hook), else --node, else the short host name.
std::string node_name(const SlurmFlags& f) {
  std::string n = env_or("SLURMD_NODENAME", f.node);
  if (!n.empty()) return n;
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string host(buf);
  return host.substr(0, host.find('.'));
}

// Everything a hook needs, from flags, environment and configuration.
struct Setup {
  Hook hook = Hook::kHealthcheck;
  std::string node;
  NodeCheckOptions check;
  slurm::Scontrol scontrol{"scontrol", 10 * kNsPerSec};
  slurm::DrainLimit limit;
  std::string job;                         // prolog, epilog
  std::optional<std::set<unsigned>> gpus;  // the job's; nullopt: it has none listed
};

Result<Setup> setup_from(const SlurmFlags& f, Hook hook) {
  const std::string command = fmt::format("cardiac slurm {}", hook_name(hook));
  auto cfg = config::load_config(f.config, f.config_named);
  if (!cfg) return fail(cfg.error());
  auto timeout = parse_duration_ns(f.timeout);
  if (!timeout || *timeout <= 0) {
    return fail(Error::invalid(
        fmt::format("{}: --timeout: not a duration: '{}' (e.g. 1s, 500ms)", command, f.timeout)));
  }
  Setup s;
  s.hook = hook;
  s.node = node_name(f);
  s.check.config = std::move(*cfg);
  const auto& sc = s.check.config.slurm;
  s.check.state_dir = f.state_dir.empty()
                          ? env_or("CARDIAC_STATE_DIR", s.check.config.agent.state_dir)
                          : f.state_dir;
  s.check.timeout = *timeout;
  s.check.use_agent = !f.local;
  s.check.nvml_lib = f.nvml_lib;
  // --scontrol, else CARDIAC_SCONTROL, else the configuration's.
  s.scontrol =
      slurm::Scontrol(f.scontrol.empty() ? env_or("CARDIAC_SCONTROL", sc.scontrol) : f.scontrol,
                      sc.scontrol_timeout);
  s.limit.percent = sc.drain_limit_percent;
  s.limit.min_nodes = sc.drain_limit_min_nodes;
  s.limit.max_nodes = sc.drain_limit_max_nodes;
  s.limit.window = sc.drain_window;
  if (hook != Hook::kHealthcheck) {
    s.job = f.job.empty() ? env_or("SLURM_JOB_ID", "") : f.job;
    if (s.job.empty()) {
      return fail(
          Error::invalid(command + ": no job: SLURM_JOB_ID is not set and --job not given"));
    }
    // Slurm sets SLURM_JOB_GPUS for prologs and epilogs; CUDA_VISIBLE_DEVICES in a job.
    std::string list =
        f.gpus.empty() ? env_or("SLURM_JOB_GPUS", env_or("CUDA_VISIBLE_DEVICES", "")) : f.gpus;
    if (!list.empty()) {
      auto gpus = slurm::parse_gpu_list(list);
      if (!gpus) return fail(gpus.error().with_context(command));
      s.gpus = std::set<unsigned>(gpus->begin(), gpus->end());
    }
  }
  return s;
}

// What a hook found and did, for the text and JSON outputs.
struct Outcome {
  std::string node;
  std::string source;
  std::string verdict;  // "OK", "CRITICAL", "UNKNOWN"
  std::vector<std::string> problems;
  std::vector<std::string> notes;
  slurm::Plan plan;
  std::string done;   // "drained", "resumed", "held", "" (nothing changed), "would …" (dry run)
  std::string error;  // what could not be done
  std::optional<bool> alerted;
  int exit_code = kExitOk;
};

nlohmann::json to_json(const Outcome& o, Hook hook, const std::string& job) {
  nlohmann::json j{{"hook", hook_name(hook)},
                   {"node", o.node},
                   {"source", o.source},
                   {"verdict", o.verdict},
                   {"problems", o.problems},
                   {"notes", o.notes},
                   {"action", slurm::action_name(o.plan.action)},
                   {"done", o.done},
                   {"why", o.plan.why},
                   {"exit_code", o.exit_code}};
  if (!o.plan.reason.empty()) j["reason"] = o.plan.reason;
  if (o.plan.allowance > 0 || o.plan.recent > 0) {
    j["drain_limit"] = {{"recent", o.plan.recent},
                        {"allowance", o.plan.allowance},
                        {"recent_nodes", o.plan.recent_nodes}};
  }
  if (!job.empty()) j["job"] = job;
  if (o.alerted) j["alert_delivered"] = *o.alerted;
  if (!o.error.empty()) j["error"] = o.error;
  return j;
}

void print(const Outcome& o, Hook hook, const std::string& job, bool json, Context& ctx) {
  if (json) {
    ctx.out << to_json(o, hook, job).dump(2) << "\n";
    return;
  }
  // One line first: slurmd logs what a hook prints, a person reads the first line.
  const std::string who = job.empty() ? o.node : fmt::format("{} job {}", o.node, job);
  ctx.out << fmt::format("cardiac slurm {}: {}: {}{}\n", hook_name(hook), who, o.verdict,
                         o.plan.why.empty() ? "" : " - " + o.plan.why);
  if (!o.done.empty()) ctx.out << "action: " << o.done << "\n";
  for (const auto& p : o.problems) ctx.out << "problem: " << p << "\n";
  for (const auto& n : o.notes) ctx.out << "note: " << n << "\n";
  if (o.alerted) {
    ctx.out << (*o.alerted ? "alert: delivered to the notifiers\n"
                           : "alert: NOT delivered (see the errors above)\n");
  }
  if (!o.error.empty()) ctx.err << "cardiac slurm " << hook_name(hook) << ": " << o.error << "\n";
}

// The critical alert of a held drain, through the configured notifiers (the log when none):
// the health check exits at once, so it delivers itself instead of leaving it to an agent
// that may be the thing that is broken.
bool raise_held_alert(const Setup& s, const slurm::Plan& plan, Context& ctx) {
  notify::Notification n;
  n.status = "firing";
  n.alertname = "slurm_drain_limit";
  n.severity = "critical";
  n.labels = {{"node", s.node}, {"hostname", s.node}, {"hook", std::string(hook_name(s.hook))}};
  if (!s.job.empty()) n.labels["job"] = s.job;
  n.annotations["summary"] =
      fmt::format("cardiac held the Slurm drain of {}: blast-radius limit reached", s.node);
  n.annotations["description"] = fmt::format(
      "{}. Wanted: {}. Check whether many nodes really fail at once (a driver-wide event, a bad "
      "rule); drain by hand with scontrol if they do.",
      plan.why, plan.reason);
  n.starts_at = ctx.clock.now();
  n.fingerprint = "slurm_drain_limit/" + s.node;
  bool delivered = false;
  for (bool alertmanager : {false, true}) {
    auto d = agent::make_dispatcher(s.check.config, alertmanager);
    if (!d) {
      ctx.err << "cardiac slurm: notifiers: " << d.error().what() << "\n";
      continue;
    }
    if (!*d) continue;
    (*d)->submit({n});
    (*d)->stop(std::chrono::milliseconds(5000));
    for (const auto& st : (*d)->stats()) {
      if (st.delivered > 0) {
        delivered = true;
      } else {
        ctx.err << "cardiac slurm: alert to " << st.name << " not delivered: " << st.last_error
                << "\n";
      }
    }
  }
  return delivered;
}

// Carries out `o.plan` (unless a dry run) and records what happened.
void act(const Setup& s, bool dry_run, Outcome& o, Context& ctx) {
  using slurm::Action;
  const auto& plan = o.plan;
  if (plan.action == Action::kNone) return;
  if (dry_run) {
    o.done = fmt::format("would {} (dry run)", slurm::action_name(plan.action));
    return;
  }
  if (plan.action == Action::kDrain) {
    if (auto r = s.scontrol.drain(s.node, plan.reason); !r) {
      o.error = "drain failed: " + r.error().what();
      o.exit_code = kExitCannotRun;
      return;
    }
    o.done = "drained: " + plan.reason;
    // Another node may have drained in the same moment: read Slurm again and undo this drain
    // if it is one too many (slurm::drain_overdrawn), as the limit would have held it.
    auto after = s.scontrol.nodes();
    if (after && slurm::drain_overdrawn(*after, s.node, s.limit, ctx.clock.now())) {
      if (auto r = s.scontrol.resume(s.node); !r) {
        o.error = "undoing a drain past the limit failed: " + r.error().what();
        o.exit_code = kExitCannotRun;
        return;
      }
      o.plan.action = Action::kHold;
      o.plan.why += "; undone: another node drained at the same moment and the limit allows " +
                    std::to_string(slurm::drain_allowance(s.limit, after->size()));
      o.done = "drain undone (blast-radius limit); critical alert raised";
      o.alerted = raise_held_alert(s, o.plan, ctx);
    }
  } else if (plan.action == Action::kResume) {
    if (auto r = s.scontrol.resume(s.node); !r) {
      o.error = "resume failed: " + r.error().what();
      o.exit_code = kExitCannotRun;
      return;
    }
    o.done = "resumed";
  } else if (plan.action == Action::kHold) {
    o.done = "drain held by the blast-radius limit; critical alert raised";
    o.alerted = raise_held_alert(s, plan, ctx);
  }
}

// This node and every node Slurm lists, or why not.
Result<std::pair<slurm::NodeInfo, std::vector<slurm::NodeInfo>>> slurm_nodes(const Setup& s) {
  auto nodes = s.scontrol.nodes();
  if (!nodes) return fail(nodes.error());
  auto self = std::find_if(nodes->begin(), nodes->end(),
                           [&](const slurm::NodeInfo& n) { return n.name == s.node; });
  if (self == nodes->end()) {
    return fail(Error::not_found(fmt::format(
        "node '{}' is not in Slurm's node list (set SLURMD_NODENAME or --node)", s.node)));
  }
  slurm::NodeInfo me = *self;
  return std::make_pair(std::move(me), std::move(*nodes));
}

int run_healthcheck(const Setup& s, const SlurmFlags& f, Context& ctx) {
  Outcome o;
  o.node = s.node;
  const NodeCheck c = check_node(s.check, ctx.clock);
  o.source = c.source;
  o.notes = c.notes;
  std::vector<std::string> critical;
  for (const auto& p : c.problems) {
    if (p.level == health::Level::kFail) critical.push_back(p.text);
  }
  o.problems = critical;
  if (!c.level) {
    // Not knowing is no reason to drain, nor to resume a node cardiac drained.
    o.verdict = "UNKNOWN";
    o.plan.why = c.unknown + "; Slurm left as it is";
    o.exit_code = kExitCannotRun;
    print(o, s.hook, "", f.json, ctx);
    return o.exit_code;
  }
  o.verdict = critical.empty() ? "OK" : "CRITICAL";
  auto nodes = slurm_nodes(s);
  if (!nodes) {
    o.error = nodes.error().what();
    o.exit_code = kExitCannotRun;
    print(o, s.hook, "", f.json, ctx);
    return o.exit_code;
  }
  o.plan = slurm::plan_healthcheck(critical, nodes->first, nodes->second, s.limit, ctx.clock.now());
  o.exit_code = critical.empty() ? kExitOk : kExitFindings;
  act(s, f.dry_run, o, ctx);
  print(o, s.hook, "", f.json, ctx);
  return o.exit_code;
}

// The prolog: critical problems of the job's GPUs (and of the node as a whole) stop the job
// before it starts. cardiac's own trouble never does: a prolog that fails drains the node.
int run_prolog(const Setup& s, const SlurmFlags& f, Context& ctx) {
  Outcome o;
  o.node = s.node;
  const NodeCheck c = check_node(s.check, ctx.clock);
  o.source = c.source;
  o.notes = c.notes;
  std::vector<std::string> critical;
  for (const auto& p : c.problems) {
    if (p.level != health::Level::kFail) continue;
    const bool mine = !p.gpu || !s.gpus || s.gpus->count(*p.gpu) > 0;
    if (mine) {
      critical.push_back(p.text);
    } else {
      o.notes.push_back("not this job's GPU: " + p.text);
    }
  }
  o.problems = critical;
  if (!c.level) {
    o.verdict = "UNKNOWN";
    o.plan.why = c.unknown + "; the job may start";
    print(o, s.hook, s.job, f.json, ctx);
    return kExitOk;
  }
  if (critical.empty()) {
    o.verdict = "OK";
    print(o, s.hook, s.job, f.json, ctx);
    return kExitOk;
  }
  o.verdict = "CRITICAL";
  auto nodes = slurm_nodes(s);
  if (!nodes) {
    // Slurm drains the node itself when the prolog fails; the reason is then Slurm's.
    o.error = nodes.error().what();
    o.exit_code = kExitFindings;
    print(o, s.hook, s.job, f.json, ctx);
    return o.exit_code;
  }
  std::string problem = critical.front();
  if (critical.size() > 1) problem += fmt::format("; {} more", critical.size() - 1);
  o.plan = slurm::plan_drain(problem, nodes->first, nodes->second, s.limit, ctx.clock.now());
  // Held by the limit: the job starts (the limit is there for cardiac being wrong everywhere).
  o.exit_code = o.plan.action == slurm::Action::kHold ? kExitOk : kExitFindings;
  act(s, f.dry_run, o, ctx);
  print(o, s.hook, s.job, f.json, ctx);
  return o.exit_code;
}

// GET path from the agent at agent.listen (with its token when this user may read it).
Result<nlohmann::json> agent_get(const NodeCheckOptions& o, const std::string& path) {
  auto listen = config::split_listen(o.config.agent.listen);
  if (!listen) return fail(listen.error());
  std::string host = listen->first;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  httplib::Client cli(host, listen->second);
  const auto secs = static_cast<time_t>(o.timeout / kNsPerSec);
  const auto usecs = static_cast<time_t>((o.timeout % kNsPerSec) / 1000);
  cli.set_connection_timeout(secs, usecs);
  cli.set_read_timeout(secs, usecs);
  std::string token = o.config.agent.token;
  if (token.empty()) {
    std::ifstream in(o.state_dir + "/api-token");
    if (in) std::getline(in, token);
  }
  if (!token.empty()) cli.set_bearer_token_auth(std::string(trim(token)));
  auto r = cli.Get(path);
  const std::string where = fmt::format("{}:{}", host, listen->second);
  if (!r) {
    return fail(Error::unavailable(
        fmt::format("no agent answers at {} ({})", where, httplib::to_string(r.error()))));
  }
  if (r->status != 200) {
    return fail(Error::unavailable(
        fmt::format("the agent at {} answered {} {}", where, r->status, trim(r->body))));
  }
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return fail(Error::parse("the agent at " + where + " answered non-JSON"));
  return j;
}

// The epilog: the Xids the agent recorded on the job's GPUs between its start and now, named
// with the job; a critical one drains the node with a reason that names the job.
int run_epilog(const Setup& s, const SlurmFlags& f, Context& ctx) {
  Outcome o;
  o.node = s.node;
  const TimeNs now = ctx.clock.now();
  auto job = s.scontrol.job(s.job);
  TimeNs start = 0;
  TimeNs end = now;
  if (job && job->start > 0) {
    start = job->start;
    if (job->end > 0 && job->end < now) end = job->end;
  } else if (auto env = parse_u64(env_or("SLURM_JOB_START_TIME", ""))) {
    start = static_cast<TimeNs>(*env) * kNsPerSec;
  } else {
    o.verdict = "UNKNOWN";
    o.error = "the job's start time is unknown: " +
              (job ? std::string("scontrol shows none") : job.error().what());
    print(o, s.hook, s.job, f.json, ctx);
    return kExitOk;
  }
  // The kernel stamps a line before the agent reads it: a second of slack at each end.
  auto events =
      agent_get(s.check, fmt::format("/api/v1/events?since={}&limit=10000", start / kNsPerSec - 1));
  if (!events || !events->is_array()) {
    o.verdict = "UNKNOWN";
    o.source = "none";
    o.plan.why = "Xids are recorded by the running agent only: " +
                 (events ? std::string("unexpected answer") : events.error().what());
    print(o, s.hook, s.job, f.json, ctx);
    return kExitOk;
  }
  o.source = "agent " + s.check.config.agent.listen;
  // A kernel-log line names the GPU by its PCI address: the agent's status maps it to an index.
  auto status = agent_get(s.check, "/api/v1/status");
  std::vector<std::string> critical;
  for (const auto& x :
       slurm::job_xids(*events, status ? *status : nlohmann::json(), start, end, s.gpus, s.job)) {
    o.problems.push_back(
        fmt::format("{} at {} ({})", x.text, format_iso8601(x.time), severity_name(x.severity)));
    if (x.severity == Severity::kCritical) critical.push_back(x.text);
  }
  if (critical.empty()) {
    o.verdict = o.problems.empty() ? "OK" : "WARNING";
    o.plan.why = o.problems.empty() ? "no Xid on the job's GPUs during the job"
                                    : "Xids during the job, none critical";
    print(o, s.hook, s.job, f.json, ctx);
    return kExitOk;
  }
  o.verdict = "CRITICAL";
  auto nodes = slurm_nodes(s);
  if (!nodes) {
    o.error = nodes.error().what();
    print(o, s.hook, s.job, f.json, ctx);
    return kExitFindings;
  }
  std::string problem = critical.front();
  if (critical.size() > 1) problem += fmt::format("; {} more", critical.size() - 1);
  o.plan = slurm::plan_drain(problem, nodes->first, nodes->second, s.limit, now);
  o.exit_code = o.plan.action == slurm::Action::kHold ? kExitOk : kExitFindings;
  act(s, f.dry_run, o, ctx);
  print(o, s.hook, s.job, f.json, ctx);
  return o.exit_code;
}

void common_flags(CLI::App& sub, SlurmFlags& f) {
  sub.add_option("--config", f.config,
                 "Configuration file (the agent's address, [slurm] scontrol and drain limit)")
      ->capture_default_str();
  sub.add_option("--state-dir", f.state_dir, "The agent's state directory (for its API token)");
  sub.add_option("--timeout", f.timeout,
                 "Deadline for the agent's answers and for each NVML answer of a local sample")
      ->capture_default_str();
  sub.add_option("--nvml-lib", f.nvml_lib, "NVML library for a local sample");
  sub.add_option("--node", f.node, "Slurm node name when SLURMD_NODENAME is not set");
  sub.add_option("--scontrol", f.scontrol,
                 "scontrol program (default: $CARDIAC_SCONTROL, else [slurm] scontrol)");
  sub.add_flag("--local", f.local, "Sample this machine even when an agent runs");
  sub.add_flag("--json", f.json, "JSON output (the exit code is the same)");
  sub.add_flag("--dry-run", f.dry_run, "Decide and print, but change nothing in Slurm");
}

void job_flags(CLI::App& sub, SlurmFlags& f) {
  sub.add_option("--job", f.job, "Job id when SLURM_JOB_ID is not set");
  sub.add_option("--gpus", f.gpus,
                 "The job's GPU indices (default: $SLURM_JOB_GPUS, else $CUDA_VISIBLE_DEVICES)");
}

}  // namespace

Runner register_slurm(CLI::App& app) {
  app.require_subcommand(1);
  app.footer(
      "Exit codes: healthcheck 0 healthy, 1 critical fault (drained, or the drain held), 3 "
      "cannot tell or scontrol failed; prolog and epilog 1 only for a critical fault of the "
      "job's GPUs (Slurm then drains the node; a prolog's job is requeued), else 0. "
      "See docs/slurm.md.");
  struct Sub {
    Hook hook;
    CLI::App* app;
    std::shared_ptr<SlurmFlags> flags;
  };
  auto subs = std::make_shared<std::vector<Sub>>();
  auto add = [&](Hook hook, const char* help) {
    auto f = std::make_shared<SlurmFlags>();
    CLI::App* sub = app.add_subcommand(std::string(hook_name(hook)), help);
    common_flags(*sub, *f);
    if (hook != Hook::kHealthcheck) job_flags(*sub, *f);
    subs->push_back({hook, sub, f});
  };
  add(Hook::kHealthcheck,
      "Slurm HealthCheckProgram: drain this node on a critical GPU fault (reason 'cardiac: …'), "
      "resume it when healthy if cardiac drained it; never more drains than the blast-radius "
      "limit");
  add(Hook::kProlog,
      "Slurm Prolog: exit 1 on a critical fault of the job's GPUs, so Slurm drains the node and "
      "requeues the job");
  add(Hook::kEpilog,
      "Slurm Epilog: the Xids on the job's GPUs while it ran, named with the job; drain on a "
      "critical one");
  return [subs](Context& ctx) -> int {
    for (auto& s : *subs) {
      if (!s.app->parsed()) continue;
      s.flags->config_named = s.app->count("--config") > 0;
      auto setup = setup_from(*s.flags, s.hook);
      if (!setup) {
        ctx.err << "cardiac slurm " << hook_name(s.hook) << ": " << setup.error().what() << "\n";
        // A prolog or epilog that fails drains the node: cardiac's own misconfiguration must
        // not empty the cluster, so those two say so and let the job be.
        return s.hook == Hook::kHealthcheck ? kExitUsage : kExitOk;
      }
      switch (s.hook) {
        case Hook::kHealthcheck:
          return run_healthcheck(*setup, *s.flags, ctx);
        case Hook::kProlog:
          return run_prolog(*setup, *s.flags, ctx);
        case Hook::kEpilog:
          return run_epilog(*setup, *s.flags, ctx);
      }
    }
    return kExitUsage;
  };
}

}  // namespace cardiac::cli
