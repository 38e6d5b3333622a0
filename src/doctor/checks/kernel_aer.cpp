// SPDX-License-Identifier: Apache-2.0
// PCIe AER: the kernel's error reports grouped into incidents, linked to the GPU behind the
// erring port (sysfs, the driver's own line, or timing), and one finding per GPU or device for
// those no Xid finding told.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "doctor/checks/kernel_analysis.h"
#include "doctor/kernel_log.h"
#include "health/faults.h"
#include "kmsg/context.h"
#include "kmsg/record.h"

namespace cardiac::doctor::kernel_detail {
namespace {

constexpr DurationNs kHour = 3600 * kNsPerSec;

// 0 corrected (or not known), 1 uncorrected non-fatal, 2 uncorrected fatal.
int aer_rank(std::optional<kmsg::AerSeverity> severity) {
  return severity ? static_cast<int>(*severity) : 0;
}

bool is_bus_error_line(const kmsg::KernelEvent& e) {
  return e.message.rfind("PCIe Bus Error:", 0) == 0;
}

// "type=Data Link Layer," → "Data Link Layer".
std::string aer_type(const std::string& message) {
  auto at = message.find("type=");
  if (at == std::string::npos) return {};
  auto end = message.find(',', at);
  return message.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
}

// The GPU that lost its link right after an uncorrected error, when sysfs cannot say.
std::vector<std::string> gpu_by_timing(const Analysis& a, std::size_t aer_event) {
  for (std::size_t i = aer_event + 1; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (!follows_closely(a, aer_event, i, 10 * kNsPerSec, 10)) break;
    if (health::fault_class_of(e) == health::FaultClass::kFallenOffBus) {
      if (!e.pci_bus_id.empty()) return {e.pci_bus_id};
    }
  }
  return {};
}

// Most corrected errors within any one hour (0 when the events carry no times).
std::size_t max_per_hour(const Analysis& a, const std::vector<const AerIncident*>& incs) {
  std::vector<TimeNs> t;
  for (const auto* inc : incs) {
    if (auto ts = a.ev(inc->events.front()).time_ns) t.push_back(*ts);
  }
  std::sort(t.begin(), t.end());
  std::size_t best = 0;
  for (std::size_t lo = 0, hi = 0; hi < t.size(); ++hi) {
    while (t[hi] - t[lo] > kHour) ++lo;
    best = std::max(best, hi - lo + 1);
  }
  return best;
}

Finding aer_finding(const Analysis& a, const std::vector<const AerIncident*>& incs) {
  const AerIncident& first = *incs.front();
  Finding f;
  f.id = "kernel.aer";
  f.category = Category::kHardware;
  if (first.gpus.size() == 1) f.gpu = a.map.by_bus_id(first.gpus.front());
  std::size_t by_rank[3] = {0, 0, 0};
  std::set<std::string> types;
  std::set<std::string> details;
  std::vector<std::size_t> events;
  for (const auto* inc : incs) {
    ++by_rank[aer_rank(inc->severity)];
    if (!inc->type.empty()) types.insert(inc->type);
    details.insert(inc->details.begin(), inc->details.end());
    events.push_back(inc->events.front());
  }
  std::string target;
  if (first.gpus.size() == 1) {
    target = "the link to " + gpu_label(f.gpu);
  } else if (first.gpus.size() > 1) {
    target = fmt::format("the link to GPUs {}", fmt::join(first.gpus, ", "));
  } else {
    target = fmt::format("PCI device {} (not a GPU)", first.device);
  }
  auto errors = [](std::size_t n, const char* kind) {
    return fmt::format("{} {} error{}, ", n, kind, n == 1 ? "" : "s");
  };
  std::string counts;
  if (by_rank[2]) counts += errors(by_rank[2], "uncorrected fatal");
  if (by_rank[1]) counts += errors(by_rank[1], "uncorrected non-fatal");
  if (by_rank[0]) counts += errors(by_rank[0], "corrected");
  counts.resize(counts.size() - 2);
  const bool gpu_linked = !first.gpus.empty();
  if (by_rank[2] > 0) {
    f.severity = Severity::kCritical;
    f.confidence = first.linked_by == "timing" ? Confidence::kMedium : Confidence::kHigh;
    f.title = fmt::format("Uncorrected fatal PCIe error on {}", target);
  } else if (by_rank[1] > 0) {
    f.severity = Severity::kWarning;
    f.confidence = Confidence::kMedium;
    f.title = fmt::format("Uncorrected PCIe errors on {}", target);
  } else {
    const std::size_t per_hour = max_per_hour(a, incs);
    const std::size_t n = by_rank[0];
    const bool steady = n >= 100 || per_hour >= 10 || (per_hour == 0 && n >= 10);
    f.severity = steady ? Severity::kWarning : Severity::kInfo;
    f.confidence = n <= 2 ? Confidence::kLow : Confidence::kMedium;
    f.title = fmt::format("{} corrected PCIe error{} on {}", n, n == 1 ? "" : "s", target);
  }
  std::string expl = fmt::format("PCIe Advanced Error Reporting logged {} on {}{}.", counts, target,
                                 span_text(a, events));
  if (!types.empty()) expl += fmt::format(" Layer: {}.", fmt::join(types, ", "));
  if (!details.empty()) expl += fmt::format(" Errors: {}.", fmt::join(details, ", "));
  const std::string port = first.reporter.empty() ? first.device : first.reporter;
  if (gpu_linked) {
    if (first.linked_by == "timing") {
      expl += fmt::format(" The report came from {}; the GPU lost its link right after.", port);
    } else if (first.linked_by == "sysfs") {
      expl += fmt::format(" The report came from {}, and sysfs shows the GPU behind it.", port);
    } else {
      expl += fmt::format(" The report came from {}; the driver named the GPU.", port);
    }
  }
  if (f.severity == Severity::kInfo) {
    expl += " A few corrected errors are normal: the link retried and no data was lost.";
  } else if (by_rank[2] == 0 && by_rank[1] == 0) {
    expl +=
        " A steady stream of corrected errors means a marginal link (seating, riser, "
        "cable or slot) that may get worse.";
  } else {
    expl += " Uncorrected errors mean data on the link was lost; fatal ones take the link down.";
  }
  f.explanation = std::move(expl);
  add_log_evidence(f, a, events, 4);
  for (const auto* inc : incs) {
    const auto& ctx = a.context(inc->events.front());
    if (!ctx.empty()) {
      f.evidence.push_back(log_evidence(a, inc->events.front(), ctx.front()));
      break;
    }
  }
  const std::string who = gpu_linked ? gpu_label(f.gpu) : first.device;
  if (f.severity == Severity::kInfo) {
    f.actions = {
        "Nothing to do now; watch the rate (cardiac agent keeps the kernel log's "
        "events)",
        fmt::format("Check that {} runs at its full PCIe width and speed (cardiac "
                    "status)",
                    who)};
  } else {
    f.actions = {fmt::format("Check the PCIe link of {} now: width and speed (cardiac status, "
                             "nvidia-smi -q -d PCI)",
                             who),
                 fmt::format("At the next maintenance window power off, reseat {} and its "
                             "riser, and check its power cables",
                             who),
                 "If the errors come back, cross-check the card in another slot: a fault that "
                 "follows the card is the card, one that stays is the slot or riser"};
  }
  return f;
}

}  // namespace

std::string aer_story(const AerIncident& inc) {
  std::string port = inc.reporter.empty() ? inc.device : inc.reporter;
  std::string what = inc.details.empty() ? std::string("an uncorrected fatal error")
                                         : fmt::format("{}", fmt::join(inc.details, ", "));
  return fmt::format(
      " Just before, PCIe port {} reported {} (AER, uncorrected fatal){}: the PCIe link to the GPU "
      "went down first, then the driver lost the GPU. A link that drops like this points at power, "
      "the slot or riser, or the card.",
      port, what, inc.linked_by == "sysfs" ? ", and sysfs shows this GPU behind it" : "");
}

std::vector<AerIncident> aer_incidents(const Analysis& a) {
  std::vector<AerIncident> out;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind != kmsg::EventKind::kAer) continue;
    const bool joins = !out.empty() && out.back().events.size() == 1 &&
                       out.back().events.back() + 1 == i && is_bus_error_line(e) &&
                       !is_bus_error_line(a.ev(out.back().events.back())) &&
                       (out.back().device == e.pci_bus_id || out.back().reporter == e.pci_bus_id);
    if (!joins) {
      out.emplace_back();
      out.back().device = e.pci_bus_id;
    }
    AerIncident& inc = out.back();
    inc.events.push_back(i);
    if (inc.reporter.empty()) inc.reporter = e.reporter;
    if (aer_rank(e.aer_severity) >= aer_rank(inc.severity) || !inc.severity) {
      inc.severity = e.aer_severity;
    }
    if (inc.type.empty()) inc.type = aer_type(e.message);
    for (const auto& m : a.context_messages(i)) {
      if (auto d = kmsg::parse_aer_detail(m)) {
        inc.details.push_back(d->first ? d->name + " (First)" : d->name);
      }
    }
  }
  for (auto& inc : out) {
    bool resolved = false;
    inc.gpus = a.gpus_behind(inc.device, resolved);
    if (inc.gpus.empty() && !inc.reporter.empty() && inc.reporter != inc.device) {
      inc.gpus = a.gpus_behind(inc.reporter, resolved);
    }
    if (!inc.gpus.empty()) inc.linked_by = "sysfs";
    // Without sysfs, "nvidia <bus>: device has no AER-aware driver" names the GPU.
    for (std::size_t k = 0; inc.gpus.empty() && k < inc.events.size(); ++k) {
      for (const auto& m : a.context_messages(inc.events[k])) {
        std::string dev = kmsg::line_device(m);
        if (m.rfind("nvidia ", 0) == 0 && !dev.empty()) {
          inc.gpus = {dev};
          inc.linked_by = "driver line";
          break;
        }
      }
    }
    if (inc.gpus.empty() && !resolved && aer_rank(inc.severity) > 0) {
      inc.gpus = gpu_by_timing(a, inc.events.back());
      if (!inc.gpus.empty()) inc.linked_by = "timing";
    }
  }
  return out;
}

void aer_findings(const Analysis& a, const std::vector<AerIncident>& aer,
                  std::vector<Finding>& out) {
  std::map<std::string, std::vector<const AerIncident*>> by_target;
  for (const auto& inc : aer) {
    if (inc.folded) continue;
    std::string key = inc.gpus.empty() ? inc.device : fmt::format("{}", fmt::join(inc.gpus, ","));
    by_target[key].push_back(&inc);
  }
  for (const auto& [key, incs] : by_target) out.push_back(aer_finding(a, incs));
}

}  // namespace cardiac::doctor::kernel_detail
