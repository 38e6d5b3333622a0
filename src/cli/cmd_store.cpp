// SPDX-License-Identifier: Apache-2.0
// `cardiac history`, `cardiac events`, `cardiac alerts`: read (and for alerts, acknowledge or
// silence) through the agent's store. They work whether or not the agent is running.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "agent/control.h"
#include "alerts/alert_book.h"
#include "alerts/alert_json.h"
#include "cli/commands.h"
#include "cli/queue_client.h"
#include "cli/store_access.h"
#include "core/format.h"
#include "core/time.h"
#include "queue/client.h"
#include "server/params.h"
#include "store/events.h"
#include "store/incidents.h"
#include "store/query.h"

namespace cardiac::cli {
namespace {

struct HistoryFlags {
  std::string state_dir, metric, since = "1h", until, step = "1m";
  std::optional<int> gpu;
  bool csv = false, json = false;
};

int run_history(const HistoryFlags& f, Context& ctx) {
  TimeNs now = ctx.clock.now();
  auto since = server::parse_time_param(f.since, now);
  auto until = f.until.empty() ? Result<TimeNs>(now) : server::parse_time_param(f.until, now);
  auto step = server::parse_duration_param(f.step);
  for (auto [name, r] : {std::pair{"--since", &since}, std::pair{"--until", &until}}) {
    if (!*r) {
      ctx.err << "cardiac history: " << name << ": " << r->error().what() << "\n";
      return kExitUsage;
    }
  }
  if (!step) {
    ctx.err << "cardiac history: --step: " << step.error().what() << "\n";
    return kExitUsage;
  }
  if (*until < *since) {
    ctx.err << fmt::format("cardiac history: --until {} is before --since {}\n",
                           format_iso8601(*until), format_iso8601(*since));
    return kExitUsage;
  }
  if (f.gpu && *f.gpu < 0) {
    ctx.err << fmt::format("cardiac history: --gpu {}: a GPU index is 0 or more\n", *f.gpu);
    return kExitUsage;
  }
  const std::string state_dir = resolve_state_dir(f.state_dir);
  auto db = open_agent_store(state_dir);
  if (!db) {
    ctx.err << "cardiac history: " << db.error().what() << "\n";
    return kExitCannotRun;
  }
  store::HistoryQuery q{f.metric, std::nullopt, *since, *until, *step};
  if (f.gpu) q.gpu = static_cast<unsigned>(*f.gpu);
  if (auto ok = store::check_history_query(*db, q); !ok) {
    ctx.err << "cardiac history: " << ok.error().what() << "\n";
    return ok.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitCannotRun;
  }
  auto h = store::history(*db, q);
  if (!h) {
    ctx.err << "cardiac history: " << h.error().what() << "\n";
    return kExitCannotRun;
  }
  // An empty answer is exit 0 either way; a GPU the store never saw (a typo, another host's
  // index) is named, so it does not pass for a quiet hour.
  if (h->points.empty() && q.gpu) {
    auto seen = store::has_gpu_series(*db, q.metric, *q.gpu);
    if (!seen) {
      ctx.err << "cardiac history: " << seen.error().what() << "\n";
      return kExitCannotRun;
    }
    if (!*seen) {
      ctx.err << fmt::format("cardiac history: no samples for GPU {} in {}/cardiac.db ({})\n",
                             *q.gpu, state_dir, q.metric);
    }
  }
  if (f.json) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& p : h->points) {
      pts.push_back({{"time", format_iso8601(p.time)},
                     {"avg", p.avg},
                     {"min", p.min},
                     {"max", p.max},
                     {"count", p.count}});
    }
    ctx.out << nlohmann::json{{"metric", f.metric},
                              {"resolution", store::resolution_name(h->resolution)},
                              {"points", pts}}
                   .dump(2)
            << "\n";
    return kExitOk;
  }
  const char* sep = f.csv ? "," : "  ";
  ctx.out << "time" << sep << "avg" << sep << "min" << sep << "max" << sep << "count\n";
  for (const auto& p : h->points) {
    ctx.out << fmt::format("{}{}{:g}{}{:g}{}{:g}{}{}\n", format_iso8601(p.time), sep, p.avg, sep,
                           p.min, sep, p.max, sep, p.count);
  }
  return kExitOk;
}

struct EventsFlags {
  std::string state_dir, since = "24h";
  int limit = 1000;
  bool json = false;
};

int run_events(const EventsFlags& f, Context& ctx) {
  auto since = server::parse_time_param(f.since, ctx.clock.now());
  if (!since) {
    ctx.err << "cardiac events: --since: " << since.error().what() << "\n";
    return kExitUsage;
  }
  auto db = open_agent_store(resolve_state_dir(f.state_dir));
  if (!db) {
    ctx.err << "cardiac events: " << db.error().what() << "\n";
    return kExitCannotRun;
  }
  auto evs = store::events_since(*db, *since, static_cast<std::size_t>(f.limit));
  if (!evs) {
    ctx.err << "cardiac events: " << evs.error().what() << "\n";
    return kExitCannotRun;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : *evs) {
    if (f.json) {
      nlohmann::json j{{"time", format_iso8601(e.time_ns)},
                       {"kind", e.kind},
                       {"message", e.message},
                       {"source", e.source}};
      if (!e.pci_bus_id.empty()) j["pci_bus_id"] = e.pci_bus_id;
      if (e.xid) j["xid"] = *e.xid;
      out.push_back(std::move(j));
    } else {
      ctx.out << fmt::format("{}  {:<15} {:<13} {}\n", format_iso8601(e.time_ns),
                             e.xid ? fmt::format("{} {}", e.kind, *e.xid) : e.kind,
                             e.pci_bus_id.empty() ? "-" : e.pci_bus_id, e.message);
    }
  }
  if (f.json) ctx.out << out.dump(2) << "\n";
  return kExitOk;
}

int run_incidents(const EventsFlags& f, Context& ctx) {
  auto since = server::parse_time_param(f.since, ctx.clock.now());
  if (!since) {
    ctx.err << "cardiac incidents: --since: " << since.error().what() << "\n";
    return kExitUsage;
  }
  auto db = open_agent_store(resolve_state_dir(f.state_dir));
  if (!db) {
    ctx.err << "cardiac incidents: " << db.error().what() << "\n";
    return kExitCannotRun;
  }
  auto list = store::incidents_since(*db, *since);
  if (!list) {
    ctx.err << "cardiac incidents: " << list.error().what() << "\n";
    return kExitCannotRun;
  }
  // What the store keeps as "" (not known) is null in JSON and "-" in the table.
  auto text_or_null = [](const std::string& s) {
    return s.empty() ? nlohmann::json() : nlohmann::json(s);
  };
  auto text_or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  nlohmann::json out = nlohmann::json::array();
  constexpr std::string_view kRow = "{:>5}  {:>3}  {:<13} {:<14} {:<24}  {:<24}  {}\n";
  if (!f.json) {
    ctx.out << fmt::format(kRow, "ID", "GPU", "PCI", "KIND", "STARTED", "ENDED", "EVIDENCE");
  }
  for (const auto& i : *list) {
    if (f.json) {
      out.push_back(
          {{"id", i.id},
           {"gpu", i.gpu},
           {"uuid", text_or_null(i.uuid)},
           {"pci_bus_id", text_or_null(i.pci_bus_id)},
           {"kind", nvml::device_health_name(i.kind)},
           {"started", format_iso8601(i.started_ns)},
           {"ended", i.ended_ns ? nlohmann::json(format_iso8601(*i.ended_ns)) : nlohmann::json()},
           {"evidence", text_or_null(i.evidence)}});
    } else {
      ctx.out << fmt::format(fmt::runtime(kRow), i.id, i.gpu, text_or_dash(i.pci_bus_id),
                             nvml::device_health_name(i.kind), format_iso8601(i.started_ns),
                             i.ended_ns ? format_iso8601(*i.ended_ns) : std::string("open"),
                             text_or_dash(i.evidence));
    }
  }
  if (f.json) ctx.out << out.dump(2) << "\n";
  return kExitOk;
}

struct AlertsFlags {
  std::string state_dir, action = "list", who, matcher, duration = "2h", comment;
  std::int64_t id = 0;
  bool all = false, json = false;
};

// Acks and silences go through the agent's control socket, which records the caller the
// kernel names (SO_PEERCRED): writing the store directly would let anyone who can open it
// sign as anyone, and needs write access to the agent's store.
int change_alert(const AlertsFlags& f, Context& ctx) {
  const std::string command = "alerts " + f.action;
  nlohmann::json request = {{"op", "alerts." + f.action}};
  if (!f.who.empty()) request["by"] = f.who;
  if (f.action == "ack") {
    request["id"] = f.id;
  } else {
    if (auto d = server::parse_duration_param(f.duration); !d) {
      ctx.err << "cardiac alerts silence: --for: " << d.error().what() << "\n";
      return kExitUsage;
    }
    request["matcher"] = f.matcher;
    request["duration"] = f.duration;
    request["comment"] = f.comment;
  }
  auto r = queue::call_agent(ctx.clock, resolve_state_dir(f.state_dir), request, 60 * kNsPerSec,
                             agent::kControlSocketName);
  if (!r) {
    ctx.err << "cardiac " << command << ": " << r.error().what() << "\n";
    return exit_code_for(r.error());
  }
  if (f.action == "ack") {
    ctx.out << (f.json ? r->value("alert", nlohmann::json::object()).dump(2)
                       : fmt::format("acknowledged alert {}", f.id))
            << "\n";
  } else {
    ctx.out << (f.json ? r->value("silence", nlohmann::json::object()).dump(2)
                       : fmt::format("silenced '{}' for {}", f.matcher, f.duration))
            << "\n";
  }
  return kExitOk;
}

int run_alerts(const AlertsFlags& f, Context& ctx) {
  if (f.action == "ack" || f.action == "silence") return change_alert(f, ctx);
  // Listing only reads.
  auto db = open_agent_store(resolve_state_dir(f.state_dir));
  if (!db) {
    ctx.err << "cardiac alerts: " << db.error().what() << "\n";
    return kExitCannotRun;
  }
  alerts::AlertBook book(*db, ctx.clock);
  auto list = book.list(f.all);
  if (!list) {
    ctx.err << "cardiac alerts: " << list.error().what() << "\n";
    return kExitCannotRun;
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : *list) out.push_back(alerts::to_json(a));
    ctx.out << out.dump(2) << "\n";
    return kExitOk;
  }
  // The rule column as wide as its longest name, so that the descriptions line up.
  std::size_t rule_width = 20;
  for (const auto& a : *list) rule_width = std::max(rule_width, a.rule.size());
  ctx.out << fmt::format("{:>5}  {:<9} {:<9} {:<24} {:<{}} {}\n", "ID", "STATE", "SEVERITY",
                         "STARTED", "RULE", rule_width, "DESCRIPTION");
  for (const auto& a : *list) {
    ctx.out << fmt::format(
        "{:>5}  {:<9} {:<9} {:<24} {:<{}} {}{}{}\n", a.id, rules::alert_state_name(a.state),
        severity_name(a.severity), format_iso8601(a.started_ns), a.rule, rule_width, a.description,
        a.acked_by ? " [acked by " + *a.acked_by + "]" : "", a.silenced ? " [silenced]" : "");
  }
  return kExitOk;
}

}  // namespace

Runner register_history(CLI::App& sub) {
  auto f = std::make_shared<HistoryFlags>();
  sub.add_option("--metric", f->metric, "Metric, e.g. gpu_temperature")->required();
  sub.add_option("--gpu", f->gpu, "GPU index (omit for host metrics)");
  sub.add_option("--since", f->since, "Start: 1h (ago), RFC 3339 or unix seconds")
      ->capture_default_str();
  sub.add_option("--until", f->until, "End (default now)");
  sub.add_option("--step", f->step, "Resolution of the answer")->capture_default_str();
  auto* csv = sub.add_flag("--csv", f->csv, "CSV output");
  sub.add_flag("--json", f->json, "JSON output")->excludes(csv);
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_history(*f, ctx); };
}

Runner register_events(CLI::App& sub) {
  auto f = std::make_shared<EventsFlags>();
  sub.add_option("--since", f->since, "Start: 24h (ago), RFC 3339 or unix seconds")
      ->capture_default_str();
  sub.add_option("--limit", f->limit, "At most this many (1 to 1,000,000)")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_events(*f, ctx); };
}

Runner register_incidents(CLI::App& sub) {
  auto f = std::make_shared<EventsFlags>();
  f->since = "7d";
  sub.add_option("--since", f->since, "Start: 7d (ago), RFC 3339 or unix seconds")
      ->capture_default_str();
  sub.add_flag("--json", f->json, "JSON output");
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  return [f](Context& ctx) { return run_incidents(*f, ctx); };
}

Runner register_alerts(CLI::App& sub) {
  auto f = std::make_shared<AlertsFlags>();
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  sub.add_flag("--json", f->json, "JSON output");
  auto* list = sub.add_subcommand("list", "Open alerts (with --all also resolved ones)");
  list->add_flag("--all", f->all, "Include resolved alerts");
  auto* ack = sub.add_subcommand("ack", "Acknowledge an alert");
  ack->add_option("ID", f->id, "Alert id")->required();
  ack->add_option("--by", f->who, "A note kept next to your user name (not instead of it)");
  auto* silence = sub.add_subcommand("silence", "Silence alerts matching MATCHER");
  silence->add_option("MATCHER", f->matcher, "e.g. rule=gpu_temperature_above_slowdown,gpu=3")
      ->required();
  silence->add_option("--for", f->duration, "How long")->capture_default_str();
  silence->add_option("--comment", f->comment, "Why");
  silence->add_option("--by", f->who, "A note kept next to your user name (not instead of it)");
  // `--json` and `--state-dir` may come after the action too: `cardiac alerts list --json`.
  for (auto* action : {list, ack, silence}) action->fallthrough();
  return [f, ack, silence](Context& ctx) {
    if (ack->parsed()) f->action = "ack";
    if (silence->parsed()) f->action = "silence";
    return run_alerts(*f, ctx);
  };
}

}  // namespace cardiac::cli
