// SPDX-License-Identifier: Apache-2.0
// Rules over the agent's incident history (--db): a card that faults again soon after it came
// back ("repeat offender": the fix did not hold, the card goes back to the vendor) and a node
// whose different GPUs fail in turn (the node, not the cards: slot, riser, PSU, power).
//
// A card is followed by serial, else UUID, so its history survives a move to another slot;
// incidents of a card neither names join no history.
#include <algorithm>
#include <map>
#include <set>

#include "core/time.h"
#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"

namespace cardiac::doctor {
namespace {

constexpr DurationNs kDay = 24 * 3600 * kNsPerSec;

GpuRef ref_of(const IncidentRecord& i) {
  GpuRef g;
  g.index = i.gpu;
  g.pci_bus_id = i.pci_bus_id;
  g.uuid = i.uuid;
  g.serial = i.serial;
  return g;
}

std::string when(const std::optional<TimeNs>& t) {
  return t ? format_iso8601(*t) : std::string("-");
}

// One incident in a line: every step of its lifecycle, for the ticket.
std::string incident_line(const IncidentRecord& i) {
  std::string line = fmt::format(
      "incident {} on {} GPU {} ({}{}): {} ({}); fault {}, detected {}, fenced {}", i.id,
      i.hostname.empty() ? "this node" : i.hostname, i.gpu, i.pci_bus_id,
      i.serial.empty() ? "" : ", serial " + i.serial, i.cause.empty() ? i.kind : i.cause, i.kind,
      format_iso8601(i.started), when(i.detected), when(i.fenced));
  for (const auto& r : i.remediations) {
    line += fmt::format(", {} by {} at {}{}", r.action, r.who, format_iso8601(r.at),
                        r.note.empty() ? "" : " (" + r.note + ")");
  }
  if (i.returned) {
    line += fmt::format(", back in service {}{}", format_iso8601(*i.returned),
                        i.returned_by.empty() ? "" : " (" + i.returned_by + ")");
  } else {
    line += ", still out of service";
  }
  return line;
}

void repeat_offenders(const DoctorInput& in, std::vector<Finding>& out) {
  std::map<std::string, std::vector<const IncidentRecord*>> by_card;
  for (const auto& i : in.incidents) {
    if (!i.card().empty()) by_card[i.card()].push_back(&i);
  }
  for (auto& [card, list] : by_card) {
    std::sort(list.begin(), list.end(),
              [](const auto* a, const auto* b) { return a->started < b->started; });
    // The latest return to service followed by a fault within the window.
    const IncidentRecord* back = nullptr;
    const IncidentRecord* again = nullptr;
    for (std::size_t k = 1; k < list.size(); ++k) {
      const auto& prev = *list[k - 1];
      if (!prev.returned || list[k]->started < *prev.returned) continue;
      if (list[k]->started - *prev.returned <= kRepeatOffenderWindow) {
        back = &prev;
        again = list[k];
      }
    }
    if (again == nullptr) continue;
    const GpuRef g = ref_of(*list.back());
    const std::string who = check_util::describe(g);
    const DurationNs after = again->started - *back->returned;
    Finding f = check_util::make_finding(
        "history.repeat_offender", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} faulted again {} after it returned to service: a repeat offender", who,
                    format_duration(after)),
        fmt::format(
            "This card ({}) has {} fault incidents in the agent's history. Incident {} ({}) "
            "ended at {} and the card faulted again {} later (incident {}, {}), within the {} "
            "days a fix must hold. Whatever was done did not fix it: the card itself is the "
            "likely cause, wherever it sits. Open a hardware ticket with the whole history "
            "below.",
            card, list.size(), back->id, back->cause.empty() ? back->kind : back->cause,
            format_iso8601(*back->returned), format_duration(after), again->id,
            again->cause.empty() ? again->kind : again->cause, kRepeatOffenderWindow / kDay));
    for (const auto* i : list) {
      f.evidence.push_back(check_util::evidence("history", incident_line(*i), i->started,
                                                "store:incident " + std::to_string(i->id)));
    }
    const std::string gpu_arg = g.serial.empty() ? g.uuid : g.serial;
    f.actions = {
        fmt::format("Keep {} fenced: `cardiac fence add {} --reason \"repeat offender, RMA\"`", who,
                    g.index ? std::to_string(*g.index) : std::string("<gpu>")),
        fmt::format("Export the history for the ticket: `cardiac incident list --gpu {} --json > "
                    "{}-history.json`",
                    gpu_arg, gpu_arg),
        "Open an RMA with the vendor; attach the history, `cardiac doctor --json` and "
        "`nvidia-bug-report.sh` output",
        fmt::format("Record it: `cardiac incident remediate {} --action rma --note \"RMA "
                    "<ticket>\"`, then `--action replace` when the new card is in",
                    list.back()->id),
    };
    out.push_back(std::move(f));
  }
}

void node_suspects(const DoctorInput& in, std::vector<Finding>& out) {
  std::map<std::string, std::vector<const IncidentRecord*>> by_node;
  for (const auto& i : in.incidents) {
    if (in.now - i.started <= kNodeSuspectWindow && i.started <= in.now) {
      by_node[i.hostname].push_back(&i);
    }
  }
  for (auto& [node, list] : by_node) {
    // Per card (or slot, for a card nothing names): how many incidents, and the latest one.
    std::map<std::string, std::pair<std::size_t, const IncidentRecord*>> per_card;
    for (const auto* i : list) {
      auto& [n, latest] = per_card[i->card().empty() ? "slot " + i->pci_bus_id : i->card()];
      ++n;
      if (latest == nullptr || i->started > latest->started) latest = i;
    }
    const IncidentRecord* worst = nullptr;
    std::size_t most = 0;
    for (const auto& [card, entry] : per_card) {
      if (entry.first > most) {
        most = entry.first;
        worst = entry.second;
      }
    }
    if (list.size() < kNodeSuspectIncidents || per_card.size() < kNodeSuspectCards) continue;
    // Three cards or more failing in turn is hard to blame on bad luck.
    const bool critical = per_card.size() >= kNodeSuspectCards + 1;
    const std::string host = node.empty() ? std::string("this node") : node;
    Finding f = check_util::make_finding(
        "history.node_suspect", Category::kHardware,
        critical ? Severity::kCritical : Severity::kWarning,
        critical ? Confidence::kMedium : Confidence::kLow, GpuRef{},
        fmt::format("{} different GPUs of {} failed in turn ({} incidents in {} days): suspect "
                    "the node",
                    per_card.size(), host, list.size(), kNodeSuspectWindow / kDay),
        std::string(
            "Cards rarely fail together by chance. When different GPUs of one node fault in "
            "turn, what they share is the likely cause: their slots' risers or PCIe switch, the "
            "power supplies and their feeds, the baseboard, the cooling or the firmware. The "
            "cross-check below tells the node from the cards: move a suspect card to a "
            "known-good node and a known-good card into its slot."));
    std::sort(list.begin(), list.end(),
              [](const auto* a, const auto* b) { return a->started < b->started; });
    for (const auto* i : list) {
      f.evidence.push_back(check_util::evidence("history", incident_line(*i), i->started,
                                                "store:incident " + std::to_string(i->id)));
    }
    f.actions = {
        "Read the node's power and hardware event log: `ipmitool sel list` and `ipmitool sdr "
        "type \"Power Supply\"` (a PSU or feed that drops out takes GPUs with it)",
        "Compare the failing GPUs' slots: `cardiac incident list --json` (bus ids) against the "
        "riser and PCIe switch layout (`lspci -tv`); failures behind one riser or switch point "
        "at it",
        "Check the node's inlet temperature and fans, and `cardiac doctor` for PCIe AER and "
        "link-width findings on the same slots",
        "Run the cross-check plan below with the card that failed most",
        "If the node is at fault, drain it (`cardiac fence add` every GPU) and have it "
        "serviced; record what was done with `cardiac incident remediate`",
    };
    f.cross_check = cross_check_plan(ref_of(*worst));
    out.push_back(std::move(f));
  }
}

}  // namespace

void check_history(const DoctorInput& in, std::vector<Finding>& out) {
  repeat_offenders(in, out);
  node_suspects(in, out);
}

}  // namespace cardiac::doctor
