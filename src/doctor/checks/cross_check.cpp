// SPDX-License-Identifier: Apache-2.0
// The cross-check plan for a suspect card: swap it with a known-good card so that the outcome
// says whether the card, the slot (riser, switch, power, cabling) or something wider is at
// fault, plus the physical checks and the room.
//
// One plan per GPU: several findings often accuse the same card (Xid 79 in the log, GPU_IS_LOST
// from NVML, a DBE before it). The plan goes to the worst of them; the others get a last action
// pointing to it, so a reader who starts from any of them finds the plan, and a report never
// repeats the same procedure.
#include <algorithm>
#include <array>
#include <iterator>

#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"

namespace cardiac::doctor {
namespace {

constexpr std::array<std::string_view, 13> kSuspectIds = {"xid.79",
                                                          "xid.48",
                                                          "xid.95",
                                                          "xid.119",
                                                          "xid.74",
                                                          "xid.140",
                                                          "xid.62",
                                                          "xid.64",
                                                          "kernel.fallen_off_bus",
                                                          "gpu.lost",
                                                          "gpu.ecc.dbe",
                                                          "gpu.row_remap.failed",
                                                          "gpu.missing_from_nvml"};

bool named_suspect(const Finding& f) {
  return std::find(kSuspectIds.begin(), kSuspectIds.end(), f.id) != kSuspectIds.end();
}

bool suspects_card(const Finding& f) {
  if (named_suspect(f)) return true;
  return f.category == Category::kHardware && f.severity == Severity::kCritical && !f.gpu.empty();
}

// Bus id first: it is what the kernel log names and it is unique on one machine; then what
// each source may know instead. Two refs with nothing in common are different GPUs.
bool same_gpu(const GpuRef& a, const GpuRef& b) {
  if (!a.pci_bus_id.empty() && !b.pci_bus_id.empty()) return a.pci_bus_id == b.pci_bus_id;
  if (!a.uuid.empty() && !b.uuid.empty()) return a.uuid == b.uuid;
  if (!a.serial.empty() && !b.serial.empty()) return a.serial == b.serial;
  if (a.index && b.index) return *a.index == *b.index;
  return a.empty() && b.empty();
}

void merge_into(GpuRef& into, const GpuRef& from) {
  if (!into.index) into.index = from.index;
  if (into.pci_bus_id.empty()) into.pci_bus_id = from.pci_bus_id;
  if (into.uuid.empty()) into.uuid = from.uuid;
  if (into.serial.empty()) into.serial = from.serial;
  if (into.name.empty()) into.name = from.name;
}

struct Group {
  GpuRef gpu;                        // everything the findings know about the card together
  std::vector<std::size_t> members;  // indices into findings
};

// Worst first: severity, then confidence, then a finding that names the card outright.
bool outranks(const Finding& a, const Finding& b) {
  if (a.severity != b.severity) return a.severity > b.severity;
  if (a.confidence != b.confidence) return a.confidence > b.confidence;
  return named_suspect(a) && !named_suspect(b);
}

}  // namespace

CrossCheckPlan cross_check_plan(const GpuRef& g) {
  std::string who = g.empty() ? std::string("the suspect card") : check_util::describe(g);
  std::string serial = g.serial.empty()
                           ? std::string("serial unknown: read it from the card's label")
                           : "serial " + g.serial;
  std::string slot = g.pci_bus_id.empty() ? std::string("its slot")
                                          : fmt::format("its slot (bus id {})", g.pci_bus_id);
  CrossCheckPlan p;
  p.steps = {
      fmt::format("Note the suspect card: {}{}{}; label it and write down {}", who,
                  g.serial.empty() ? " (" + serial + ")" : "", g.uuid.empty() ? "" : ", " + g.uuid,
                  slot),
      "Save the current state: `cardiac status --json > before-status.json` and `cardiac "
      "doctor --json > before-doctor.json`",
      "Shut the server down and disconnect its power; wear an ESD strap",
      "Do the physical checks below while the card is out",
      fmt::format("Move the suspect card ({}) to a known-good server, or a known-good slot in "
                  "this one, and put a known-good card into {}",
                  serial, slot),
      "Boot both machines; on each run `cardiac status` and `cardiac doctor`. Find the suspect "
      "card by its serial (`nvidia-smi --query-gpu=index,serial,pci.bus_id --format=csv`): its "
      "bus id changes with the slot, its serial does not",
      "Run the workload that failed (or `dcgmi diag -r 3`) on both for at least as long as the "
      "fault took to appear, then run `cardiac doctor` on both again",
  };
  p.outcomes = {
      {"The fault follows the card: it shows on the good server, and the good card works in the "
       "suspect slot",
       fmt::format("The card is faulty: take it out of service and RMA it ({}) with the doctor "
                   "reports",
                   serial)},
      {"The fault stays with the slot: the good card now fails here, and the suspect card works "
       "elsewhere",
       "This server is at fault: the slot, its riser, the PCIe switch, the power feed or the "
       "cabling; have it serviced"},
      {"Both work",
       "Reseating fixed it (contact or oxidation on the connector): return them to "
       "service and keep watching with `cardiac agent`"},
      {"Both fail",
       "The problem is wider than one card or slot: power supplies, firmware (BIOS, "
       "VBIOS) or the driver; compare with other servers"},
  };
  p.physical_checks = {
      "Power cables to the card or baseboard: fully seated and latched, not oxidised, "
      "discoloured, melted or burnt",
      "Gold fingers: clean them with isopropyl alcohol and a lint-free cloth; look for scratches "
      "or burn marks",
      "Slot: no debris, no bent or burnt pins",
      "Heatsink: firmly seated, thermal paste not dried out (repaste if needed), fins free of "
      "dust",
      "Board: no burnt memory chips or components, no smell of burnt electronics",
      "Risers and PCIe cables: fully seated, not kinked or damaged",
  };
  p.environment =
      "Inlet air 16–25 °C for air-cooled servers (measured at the front of the server), every "
      "chassis fan working, no hot-aisle air coming back to the front";
  return p;
}

void add_cross_check_plans(std::vector<Finding>& findings) {
  std::vector<Group> groups;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (!suspects_card(findings[i])) continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return same_gpu(g.gpu, findings[i].gpu); });
    if (it == groups.end()) {
      groups.push_back(Group{findings[i].gpu, {}});
      it = std::prev(groups.end());
    } else {
      merge_into(it->gpu, findings[i].gpu);
    }
    it->members.push_back(i);
  }
  for (const auto& g : groups) {
    // A finding that already carries a plan (an earlier pass) keeps it: still one per GPU.
    std::size_t holder = g.members.front();
    bool has_plan = false;
    for (std::size_t i : g.members) {
      if (findings[i].cross_check) {
        holder = i;
        has_plan = true;
        break;
      }
      if (outranks(findings[i], findings[holder])) holder = i;
    }
    if (!has_plan) findings[holder].cross_check = cross_check_plan(g.gpu);
    std::string pointer =
        fmt::format("Cross-check this card: see the plan under \"{}\"", findings[holder].title);
    for (std::size_t i : g.members) {
      if (i == holder) continue;
      findings[i].cross_check.reset();
      auto& actions = findings[i].actions;
      if (std::find(actions.begin(), actions.end(), pointer) == actions.end()) {
        actions.push_back(pointer);
      }
    }
  }
}

}  // namespace cardiac::doctor
