// SPDX-License-Identifier: Apache-2.0
// Xids: one finding per (GPU, Xid) root cause with the catalog's category, severity and steps,
// follow-ons (45, 154) folded into the Xid before them, escalation when the same Xid comes back
// after a reboot, the driver lines that tell the same story, and the fatal AER before Xid 79.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "doctor/checks/kernel_analysis.h"
#include "doctor/checks/xid_catalog.h"
#include "doctor/kernel_log.h"
#include "health/faults.h"

namespace cardiac::doctor::kernel_detail {
namespace {

constexpr DurationNs kFollowWindow = 300 * kNsPerSec;  // a follow-on comes within minutes

// The Xid a follow-on names as its cause: "… (caused by previous Xid 31)", the phrase of
// NVIDIA's catalog for Xid 45 (shared/reference/xid-and-kmsg.md, section 7); nullopt when the
// message does not say.
std::optional<int> caused_by_xid(std::string_view message) {
  constexpr std::string_view kPhrase = "caused by previous Xid";
  auto at = message.find(kPhrase);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(at + kPhrase.size());
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == ':')) rest.remove_prefix(1);
  int n = 0;
  std::size_t digits = 0;
  while (digits < rest.size() && digits < 4 && rest[digits] >= '0' && rest[digits] <= '9') {
    n = n * 10 + (rest[digits] - '0');
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return n;
}

}  // namespace

GroupMap group_xids(const Analysis& a) {
  GroupMap groups;
  std::map<std::string, std::pair<std::size_t, int>> last_root;  // bus → (event, xid)
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind != kmsg::EventKind::kXid || !e.xid) continue;
    const int code = *e.xid;
    const XidInfo info = lookup_xid(code);
    if (info.follow_on) {
      // The driver's own words name the root ("caused by previous Xid 31"): they win over
      // position, and a root that is not in the log leaves the follow-on a finding of its own.
      if (auto named = caused_by_xid(e.message)) {
        auto root = groups.find({e.pci_bus_id, *named});
        if (root != groups.end() && !root->second.roots.empty() && *named != code) {
          root->second.follow_ons.push_back(i);
          continue;
        }
      } else if (auto it = last_root.find(e.pci_bus_id);
                 it != last_root.end() &&
                 follows_closely(a, it->second.first, i, kFollowWindow, 500)) {
        groups[{e.pci_bus_id, it->second.second}].follow_ons.push_back(i);
        continue;
      }
    } else {
      last_root[e.pci_bus_id] = {i, code};
    }
    XidGroup& g = groups[{e.pci_bus_id, code}];
    g.bus = e.pci_bus_id;
    g.xid = code;
    g.roots.push_back(i);
  }
  return groups;
}

// The Xids a "GPU needs to be reset" line joins (health's catalog), the fallen-off-bus ones
// first: when the GPU also fell off the bus, that is the story the line belongs to.
std::vector<int> reset_line_hosts() {
  std::vector<int> out = health::xids_of_class(health::FaultClass::kFallenOffBus);
  for (const auto& x : health::xid_catalog()) {
    if (x.reset_line_joins && x.fault_class != health::FaultClass::kFallenOffBus) {
      out.push_back(x.code);
    }
  }
  return out;
}

// Non-Xid driver lines that tell the same story as an Xid on that GPU join its finding; the
// rest are returned for findings of their own.
std::vector<std::size_t> fold_related(const Analysis& a, GroupMap& groups) {
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    std::vector<int> hosts;
    if (e.kind == kmsg::EventKind::kFallenOffBus)
      hosts = health::xids_of_class(health::FaultClass::kFallenOffBus);
    if (e.kind == kmsg::EventKind::kGspTimeout) hosts = {119, 120};
    if (e.kind == kmsg::EventKind::kResetRequired) hosts = reset_line_hosts();
    if (hosts.empty()) continue;
    bool folded = false;
    for (int x : hosts) {
      auto it = groups.find({e.pci_bus_id, x});
      if (it == groups.end() || e.pci_bus_id.empty()) continue;
      it->second.related.push_back(i);
      folded = true;
      break;
    }
    if (!folded) rest.push_back(i);
  }
  return rest;
}

// Fatal AER incidents on the link to `bus` shortly before event `at`.
void attach_aer(const Analysis& a, std::vector<AerIncident>& aer, XidGroup& g) {
  for (auto& inc : aer) {
    if (inc.folded || inc.severity != kmsg::AerSeverity::kUncorrectedFatal) continue;
    if (std::find(inc.gpus.begin(), inc.gpus.end(), g.bus) == inc.gpus.end()) continue;
    for (auto root : g.roots) {
      if (follows_closely(a, inc.events.front(), root, kAerWindow, 20)) {
        g.aer.push_back(&inc);
        inc.folded = true;
        break;
      }
    }
  }
}

Finding xid_finding(const Analysis& a, const XidGroup& g) {
  const XidInfo info = lookup_xid(g.xid);
  Finding f;
  f.id = fmt::format("xid.{}", g.xid);
  f.gpu = a.map.by_bus_id(g.bus);
  f.category = info.category;
  f.severity = info.severity;
  f.confidence = info.known ? Confidence::kHigh : Confidence::kMedium;
  const std::size_t n = g.roots.size();
  const std::string label = gpu_label(f.gpu);
  const std::string procs = process_list(a, g.roots);
  const auto boots = boots_of(a, g.roots);
  const bool again_after_reboot = boots.size() >= 2;

  if (g.xid >= 144 && g.xid <= 150) {
    bool fatal = std::any_of(g.roots.begin(), g.roots.end(), [&](std::size_t i) {
      return a.ev(i).message.find(" Fatal ") != std::string::npos;
    });
    f.severity = fatal ? Severity::kCritical : Severity::kWarning;
  }
  std::vector<std::string> actions;
  for (auto s : info.steps) {
    if (!s.empty()) actions.push_back(fill_step(s, f.gpu));
  }
  std::string expl =
      fmt::format("Xid {}: {}. Typical cause: {}. {} reported it {}{}.", g.xid, info.meaning,
                  info.cause, label, times_text(n), span_text(a, g.roots));

  if (info.app_error && !procs.empty()) {
    f.category = Category::kDriver;
    expl += fmt::format(
        " The driver named the process: {}. This is most often a bug or bad input "
        "in that program, not a fault of the GPU.",
        procs);
    if (actions.empty()) actions.emplace_back();
    actions.front() = fmt::format(
        "Check the application {}: run it under compute-sanitizer to find the faulting kernel "
        "or access",
        procs);
  }
  std::set<std::string> distinct_procs;
  for (auto i : g.roots) {
    if (!a.ev(i).process.empty()) distinct_procs.insert(a.ev(i).process);
  }
  const bool escalate = again_after_reboot && (info.suspect_card || info.suspect_on_repeat);
  if (info.app_error && (again_after_reboot || distinct_procs.size() >= 3)) {
    // One program faulting is the program; many programs, or faults that survive reboots,
    // on one GPU point back at the GPU.
    f.category = Category::kHardware;
    f.severity = std::max(f.severity, Severity::kWarning);
    f.confidence = Confidence::kMedium;
    expl += fmt::format(" It happened {}{} on this GPU only, so the GPU itself may be at fault.",
                        distinct_procs.size() >= 3 ? "with different programs" : "again",
                        again_after_reboot ? " after a reboot" : "");
    actions.insert(actions.begin(),
                   fill_step("Run the field diagnostic on {gpu}: dcgmi diag -r 3 -i {id}", f.gpu));
  } else if (escalate) {
    f.category = Category::kHardware;
    f.severity = Severity::kCritical;
    f.confidence = Confidence::kHigh;
    // The cross-check leads now; the catalog's own "if it comes back, cross-check" is moot.
    std::erase_if(actions,
                  [](const std::string& s) { return s.find("cross-check") != std::string::npos; });
    expl += fmt::format(
        " It came back after a reboot (in {} of the boots in this log): a reboot clears the "
        "driver and every application, so the card itself is suspect.",
        boots.size());
    actions.insert(
        actions.begin(),
        {fill_step("Take {gpu} out of service: Xid " + std::to_string(g.xid) + " survived a reboot",
                   f.gpu),
         "Cross-check the card: swap it with a healthy one (another slot or server); "
         "if the fault follows the card, RMA it, if it stays with the slot, service "
         "the slot, riser or power"});
  }
  for (const auto* inc : g.aer) expl += aer_story(*inc);
  if (!g.follow_ons.empty()) {
    std::map<int, std::size_t> counts;
    for (auto i : g.follow_ons) ++counts[a.ev(i).xid.value_or(0)];
    for (const auto& [code, count] : counts) {
      expl += fmt::format(
          " Xid {} ({}) followed {} on the same GPU: the driver cleaning up after this error, "
          "not a separate fault.",
          code, lookup_xid(code).meaning, times_text(count));
    }
    for (auto i : g.follow_ons) {
      if (a.ev(i).xid == 154) {
        expl += " The driver then said: " + quoted_sentence(a.ev(i).message);
        break;
      }
    }
  }
  if (g.related.size() == 1) {
    expl += " The driver also said: " + quoted_sentence(a.ev(g.related.front()).message);
  } else if (!g.related.empty()) {
    expl += fmt::format(" The driver also printed {} related lines, such as {}", g.related.size(),
                        quoted_sentence(a.ev(g.related.front()).message));
  }
  if (g.xid == 119 || g.xid == 120) {
    auto hung = hung_nvidia_tasks(a, a.boot_of[g.roots.front()]);
    if (!hung.empty()) {
      expl += fmt::format(" Processes were stuck in the driver at the time: {}.",
                          process_list(a, hung));
    }
  }
  if (!info.known) f.confidence = Confidence::kMedium;

  std::string what(info.meaning);
  // Every report puts the GPU before the title: the title names it only when nothing does.
  f.title = fmt::format("Xid {}{}: {}{}", g.xid, f.gpu.label().empty() ? " on " + label : "", what,
                        n > 1 ? fmt::format(" ({} times)", n) : "");
  if (info.app_error && !procs.empty() && f.category == Category::kDriver) {
    f.title += " in " + procs;
  }
  f.explanation = std::move(expl);
  f.actions = std::move(actions);

  for (const auto* inc : g.aer) f.evidence.push_back(log_evidence(a, inc->events.front()));
  const std::size_t used =
      f.evidence.size() + (g.follow_ons.empty() ? 0 : 1) + (g.related.empty() ? 0 : 1);
  add_log_evidence(f, a, g.roots, used >= 4 ? 2 : 6 - used);
  if (!g.related.empty()) f.evidence.push_back(log_evidence(a, g.related.front()));
  if (!g.follow_ons.empty()) f.evidence.push_back(log_evidence(a, g.follow_ons.front()));
  return f;
}

}  // namespace cardiac::doctor::kernel_detail
