// SPDX-License-Identifier: Apache-2.0
// `cardiac incident list` and `cardiac incident remediate`: a GPU's fault history as the agent's
// store keeps it (docs/incidents.md), and the record of what a person did about one. Listing
// reads the store; a remediation goes through the agent's control socket, which records the
// caller the kernel names (SO_PEERCRED), never a name the caller wrote.
#include <nlohmann/json.hpp>

#include "agent/control.h"
#include "cli/commands.h"
#include "cli/queue_client.h"
#include "cli/store_access.h"
#include "core/format.h"
#include "core/time.h"
#include "queue/client.h"
#include "server/params.h"
#include "store/incident_json.h"
#include "store/incidents.h"

namespace cardiac::cli {
namespace {

struct IncidentFlags {
  std::string state_dir, gpu, since = "90d", action, note, by;
  std::int64_t id = -1;
  bool json = false;
};

// The GPU an operator names: its serial, UUID or NVML index at the time.
bool matches(const store::Incident& i, const std::string& gpu) {
  return gpu.empty() || i.serial == gpu || i.uuid == gpu || std::to_string(i.gpu) == gpu;
}

std::string when(const std::optional<TimeNs>& t) {
  return t ? format_iso8601(*t) : std::string("-");
}

int run_list(const IncidentFlags& f, Context& ctx) {
  auto since = server::parse_time_param(f.since, ctx.clock.now());
  if (!since) {
    ctx.err << "cardiac incident list: --since: " << since.error().what() << "\n";
    return kExitUsage;
  }
  auto db = open_agent_store(resolve_state_dir(f.state_dir));
  if (!db) {
    ctx.err << "cardiac incident list: " << db.error().what() << "\n";
    return kExitCannotRun;
  }
  auto list = store::incidents_since(*db, *since);
  if (!list) {
    ctx.err << "cardiac incident list: " << list.error().what() << "\n";
    return kExitCannotRun;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& i : *list) {
    if (!matches(i, f.gpu)) continue;
    if (f.json) {
      out.push_back(store::incident_json(i));
      continue;
    }
    ctx.out << fmt::format("incident {}  GPU {} ({}), {}{}  {}\n", i.id, i.gpu,
                           i.pci_bus_id.empty() ? "-" : i.pci_bus_id, i.card(),
                           i.hostname.empty() ? "" : " on " + i.hostname,
                           i.cause.empty() ? nvml::device_health_name(i.kind) : i.cause);
    ctx.out << fmt::format("  fault     {}\n  detected  {}\n  fenced    {}\n",
                           format_iso8601(i.started_ns), when(i.detected_ns), when(i.fenced_ns));
    for (const auto& r : i.remediations) {
      ctx.out << fmt::format("  {:<9} {} by {}{}\n", store::remediation_action_name(r.action),
                             format_iso8601(r.at_ns), r.who, r.note.empty() ? "" : ": " + r.note);
    }
    ctx.out << fmt::format("  returned  {}\n",
                           i.ended_ns
                               ? format_iso8601(*i.ended_ns) +
                                     (i.returned_by.empty() ? "" : " (" + i.returned_by + ")")
                               : std::string("no: still open"));
    if (!i.evidence.empty()) ctx.out << "  evidence  " << i.evidence << "\n";
  }
  if (f.json) {
    ctx.out << out.dump(2) << "\n";
  } else if (list->empty()) {
    ctx.out << fmt::format("no incidents since {}\n", format_iso8601(*since));
  }
  return kExitOk;
}

int run_remediate(const IncidentFlags& f, Context& ctx) {
  // Checked here too, so a typo is a usage error without an agent to ask.
  if (auto a = store::remediation_action_from_name(f.action); !a) {
    ctx.err << "cardiac incident remediate: --action: " << a.error().what() << "\n";
    return kExitUsage;
  }
  nlohmann::json request = {
      {"op", "incidents.remediate"}, {"id", f.id}, {"action", f.action}, {"note", f.note}};
  if (!f.by.empty()) request["by"] = f.by;
  auto r = queue::call_agent(ctx.clock, resolve_state_dir(f.state_dir), request, 60 * kNsPerSec,
                             agent::kControlSocketName);
  if (!r) {
    ctx.err << "cardiac incident remediate: " << r.error().what() << "\n";
    return exit_code_for(r.error());
  }
  const nlohmann::json incident = r->value("incident", nlohmann::json::object());
  if (f.json) {
    ctx.out << incident.dump(2) << "\n";
  } else {
    ctx.out << fmt::format("incident {}: {} recorded\n", f.id, f.action);
  }
  return kExitOk;
}

}  // namespace

Runner register_incident(CLI::App& sub) {
  auto f = std::make_shared<IncidentFlags>();
  sub.add_option("--state-dir", f->state_dir, "The agent's state directory");
  sub.add_flag("--json", f->json, "JSON output");
  auto* list = sub.add_subcommand(
      "list",
      "Every fault incident with its fault, detection, fence, remediations and return to service");
  list->add_option("--gpu", f->gpu, "Only this GPU: its serial, UUID or index");
  list->add_option("--since", f->since, "Start: 90d (ago), RFC 3339 or unix seconds")
      ->capture_default_str();
  auto* remediate = sub.add_subcommand(
      "remediate", "Record what was done about an incident (under your own user name)");
  remediate->add_option("ID", f->id, "Incident id (see `cardiac incident list`)")
      ->required()
      ->check(CLI::NonNegativeNumber);
  remediate->add_option("--action", f->action, "reset, reboot, reseat, replace or rma")->required();
  remediate->add_option("--note", f->note, "What was done, a ticket number");
  remediate->add_option("--by", f->by, "A note kept next to your user name (not instead of it)");
  for (auto* action : {list, remediate}) action->fallthrough();
  sub.require_subcommand(1, 1);
  return [f, remediate](Context& ctx) {
    return remediate->parsed() ? run_remediate(*f, ctx) : run_list(*f, ctx);
  };
}

}  // namespace cardiac::cli
