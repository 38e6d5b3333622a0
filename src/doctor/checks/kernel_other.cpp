// SPDX-License-Identifier: Apache-2.0
// The kernel-log check, part two: PCIe AER linked to the GPU behind the port, hung tasks,
// NVSwitch SXid, Fabric Manager, non-Xid NVLink lines and mlx5/InfiniBand. Ids are listed at
// the top of check_kernel.cpp.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/format.h"
#include "doctor/checks/kernel_util.h"
#include "doctor/kernel_log.h"
#include "health/faults.h"
#include "kmsg/context.h"

namespace cardiac::doctor::kernel_detail {
namespace {

constexpr DurationNs kHour = 3600 * kNsPerSec;

int aer_rank(const std::string& severity) {
  if (severity == "uncorrected_fatal") return 2;
  if (severity == "uncorrected_non_fatal") return 1;
  return 0;
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

void hung_task_findings(const Analysis& a, std::vector<Finding>& out) {
  std::vector<std::size_t> nvidia;
  std::vector<std::size_t> other;
  std::vector<std::size_t> traced;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind != "hung_task") continue;
    const bool through = trace_through_nvidia(a.context(i));
    if (through) traced.push_back(i);
    (through || e.process.rfind("nvidia", 0) == 0 ? nvidia : other).push_back(i);
  }
  if (!nvidia.empty()) {
    Finding f;
    f.id = "kernel.hung_task";
    f.category = Category::kDriver;
    f.severity = Severity::kCritical;
    f.confidence = traced.empty() ? Confidence::kMedium : Confidence::kHigh;
    // The GPU whose driver call hung, when one GPU reported a timeout or a loss in that boot.
    std::set<std::string> suspects;
    for (std::size_t i = 0; i < a.in.events.size(); ++i) {
      const auto& e = a.ev(i);
      const bool lost = (e.kind == "xid" && (e.xid == 119 || e.xid == 79 || e.xid == 120)) ||
                        e.kind == "gsp_timeout" || e.kind == "fallen_off_bus";
      if (lost && !e.pci_bus_id.empty() && a.boot_of[i] == a.boot_of[nvidia.front()]) {
        suspects.insert(e.pci_bus_id);
      }
    }
    if (suspects.size() == 1) f.gpu = a.map.by_bus_id(*suspects.begin());
    const std::string procs = process_list(a, nvidia);
    f.title = fmt::format("Processes stuck in the NVIDIA driver: {}", procs);
    const std::string& msg = a.ev(nvidia.front()).message;  // "blocked for more than 120 seconds"
    const auto more = msg.find("more than ");
    f.explanation = fmt::format(
        "The kernel reported {} blocked for over {}{}{}. They wait inside the driver and cannot "
        "be killed (D state): the driver is not answering, so nvidia-smi and CUDA calls on this "
        "machine may hang the same way.",
        procs, more == std::string::npos ? "two minutes" : msg.substr(more + 10),
        span_text(a, nvidia),
        traced.empty() ? " (named like an NVIDIA tool)"
                       : ", with call traces in the nvidia module");
    if (suspects.size() == 1) {
      f.explanation +=
          fmt::format(" {} reported a GSP timeout or was lost in the same boot.", gpu_label(f.gpu));
    }
    f.actions = {"Do not start more nvidia-smi or CUDA programs now: each one hangs the same way",
                 fill_step("Reset the GPU that stopped answering once its processes are gone "
                           "(nvidia-smi -r -i {id}); if the reset hangs, reboot",
                           f.gpu),
                 "Before rebooting, collect nvidia-bug-report.sh (with a timeout: it may hang too)",
                 "If it happens again, update the driver"};
    add_log_evidence(f, a, nvidia, 3);
    for (auto i : traced) {
      for (const auto& line : a.context(i)) {
        auto p = kmsg::parse_log_line(line);
        if (p && kmsg::is_nvidia_frame(p->message)) {
          f.evidence.push_back(log_evidence(a, i, line));
          break;
        }
      }
      break;
    }
    out.push_back(std::move(f));
  }
  if (!other.empty()) {
    Finding f;
    f.id = "kernel.hung_task.other";
    f.category = Category::kResources;
    f.severity = Severity::kWarning;
    f.confidence = Confidence::kMedium;
    const std::string procs = process_list(a, other);
    std::set<std::string> modules;  // "[nfs]" tags of the frames say what they waited on
    for (auto i : other) {
      for (const auto& m : a.context_messages(i)) {
        auto open = m.rfind(" [");
        if (kmsg::is_trace_line(m) && open != std::string::npos && m.back() == ']') {
          modules.insert(m.substr(open + 2, m.size() - open - 3));
        }
      }
    }
    f.title = fmt::format("Tasks blocked in the kernel for minutes: {}", procs);
    f.explanation = fmt::format(
        "The kernel reported {} blocked {}{}, outside the NVIDIA driver. Such tasks usually wait "
        "on storage (a slow disk, NFS, a full file system) or on memory pressure, and a training "
        "job waiting like this stalls its GPUs.",
        procs, times_text(other.size()), span_text(a, other));
    if (!modules.empty()) {
      f.explanation += fmt::format(" Their call traces run through: {}.", fmt::join(modules, ", "));
    }
    f.actions = {"Look at the call traces to see what they waited on (file system, NFS, disk)",
                 "Check disk and network storage health and I/O wait (cardiac status, iostat -x)"};
    add_log_evidence(f, a, other, 4);
    out.push_back(std::move(f));
  }
}

void sxid_findings(const Analysis& a, std::vector<Finding>& out) {
  std::map<std::pair<std::string, int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind == "sxid" && e.xid) groups[{e.pci_bus_id, *e.xid}].push_back(i);
  }
  for (const auto& [key, events] : groups) {
    const bool fatal = std::any_of(events.begin(), events.end(),
                                   [&](std::size_t i) { return a.ev(i).severity == "fatal"; });
    // A report spans several lines; only its first says fatal or non-fatal.
    const auto reports = static_cast<std::size_t>(std::count_if(
        events.begin(), events.end(), [&](std::size_t i) { return !a.ev(i).severity.empty(); }));
    const std::size_t n = reports == 0 ? events.size() : reports;
    Finding f;
    f.id = "kernel.sxid";
    f.category = Category::kHardware;
    f.severity = fatal ? Severity::kCritical : Severity::kWarning;
    f.confidence = fatal ? Confidence::kHigh : Confidence::kMedium;
    f.title = fmt::format("NVSwitch {}: SXid {} ({}){}", key.first, key.second,
                          fatal ? "fatal" : "non-fatal", n > 1 ? fmt::format(", {} times", n) : "");
    f.explanation = fmt::format(
        "The NVSwitch at {} reported SXid {} {}{} (\"{}\"). {}", key.first, key.second,
        times_text(n), span_text(a, events), a.ev(events.front()).message,
        fatal ? "A fatal SXid stops NVLink traffic through that switch: jobs that span GPUs fail "
                "until the fabric is reset."
              : "A non-fatal SXid was corrected or contained; repeats point at a marginal link.");
    if (boots_of(a, events).size() >= 2) f.explanation += " It came back after a reboot.";
    f.actions = fatal ? std::vector<std::string>{
                            "Stop the jobs that use NVLink on this node, then restart "
                            "nvidia-fabricmanager or reboot to reset the NVSwitches",
                            "If it comes back after the reboot, have the NVSwitch baseboard "
                            "serviced (send the vendor nvidia-bug-report.sh)"}
                      : std::vector<std::string>{
                            "Watch for repeats: nvidia-smi nvlink -e shows the link error counters",
                            "If the same link keeps reporting, have it checked at the next "
                            "maintenance window"};
    add_log_evidence(f, a, events);
    out.push_back(std::move(f));
  }
}

// Fabric Manager, non-Xid NVLink and InfiniBand lines: one finding per kind and device.
void simple_findings(const Analysis& a, std::vector<Finding>& out) {
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind == "fabric_manager") groups[{e.kind, ""}].push_back(i);
    if (e.kind == "nvlink" || e.kind == "ib") groups[{e.kind, e.pci_bus_id}].push_back(i);
  }
  auto any = [&](const std::vector<std::size_t>& ev, std::initializer_list<const char*> words) {
    return std::any_of(ev.begin(), ev.end(), [&](std::size_t i) {
      std::string m = a.ev(i).message;
      std::transform(m.begin(), m.end(), m.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      for (const char* w : words) {
        if (m.find(w) != std::string::npos) return true;
      }
      return false;
    });
  };
  for (const auto& [key, events] : groups) {
    const auto& [kind, bus] = key;
    Finding f;
    f.id = "kernel." + kind;
    const std::string seen = fmt::format("{}{}", times_text(events.size()), span_text(a, events));
    const std::string first = a.ev(events.front()).message;
    if (kind == "fabric_manager") {
      const bool fatal = any(events, {"fatal"});
      f.category = fatal ? Category::kHardware : Category::kDriver;
      f.severity = fatal ? Severity::kCritical : Severity::kWarning;
      f.confidence = Confidence::kMedium;
      f.title = fatal ? "Fabric Manager reported an NVSwitch fatal error"
                      : "Fabric Manager reported errors";
      f.explanation = fmt::format(
          "Fabric Manager logged errors {} (\"{}\"). Without a healthy fabric, CUDA programs on "
          "NVSwitch systems fail to start or lose NVLink.",
          seen, first);
      f.actions = {
          "Check the service and its log: systemctl status nvidia-fabricmanager, "
          "/var/log/fabricmanager.log",
          "Fabric Manager's version must equal the driver's: compare them",
          "For a fatal NVSwitch error, stop the jobs and restart nvidia-fabricmanager or "
          "reboot the node"};
    } else if (kind == "nvlink") {
      const bool fatal = any(events, {"fatal"});
      f.gpu = a.map.by_bus_id(bus);
      f.category = Category::kHardware;
      f.severity = fatal ? Severity::kCritical : Severity::kWarning;
      f.confidence = Confidence::kMedium;
      f.title = fmt::format("NVLink errors{}", bus.empty() ? "" : " on " + gpu_label(f.gpu));
      f.explanation = fmt::format(
          "The driver reported NVLink errors {} (\"{}\"). A link that fails to train or to be "
          "discovered leaves the GPUs talking over PCIe, much slower, or not at all.",
          seen, first);
      f.actions = {fill_step("Check the link state: nvidia-smi nvlink --status -i {id}", f.gpu),
                   "On NVSwitch systems check that nvidia-fabricmanager is running",
                   "If links stay down after a reboot, have the baseboard or bridges checked"};
    } else {
      const bool fatal = any(events, {"fatal", "health", "syndrome", "unrecoverable"});
      std::size_t downs = 0;
      for (auto i : events) downs += any({i}, {"link down"}) ? 1 : 0;
      f.category = Category::kNetwork;
      f.severity = fatal ? Severity::kCritical : Severity::kWarning;
      f.confidence = fatal ? Confidence::kHigh : Confidence::kMedium;
      f.title = fatal ? fmt::format("InfiniBand/RoCE NIC {} reported a fatal error", bus)
                : downs > 0
                    ? fmt::format("InfiniBand/RoCE link on {} went down {}", bus, times_text(downs))
                    : fmt::format("InfiniBand/RoCE NIC {} reported errors", bus);
      f.explanation = fmt::format(
          "The mlx5 driver reported problems on {} {} (\"{}\"). {}", bus, seen, first,
          fatal ? "A health or fatal error stops the NIC until it is reset."
                : "Multi-node jobs lose their network while the link is down; flapping links "
                  "point at the cable, the transceiver or the switch port.");
      f.actions = {"Check the port: ibstat (state, rate) and ibv_devinfo",
                   fmt::format("Check the cable and the switch port (mlxlink -d {} shows link "
                               "errors)",
                               bus),
                   fatal ? "Reset the NIC or reboot, update its firmware, and replace it if the "
                           "health error repeats"
                         : "Reseat or replace the cable or transceiver if the link keeps "
                           "dropping"};
    }
    add_log_evidence(f, a, events);
    out.push_back(std::move(f));
  }
}

}  // namespace

std::vector<AerIncident> aer_incidents(const Analysis& a) {
  std::vector<AerIncident> out;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind != "aer") continue;
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
    if (aer_rank(e.severity) >= aer_rank(inc.severity) || inc.severity.empty()) {
      inc.severity = e.severity;
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

void check_kernel_other(const Analysis& a, const std::vector<AerIncident>& aer,
                        std::vector<Finding>& out) {
  std::map<std::string, std::vector<const AerIncident*>> by_target;
  for (const auto& inc : aer) {
    if (inc.folded) continue;
    std::string key = inc.gpus.empty() ? inc.device : fmt::format("{}", fmt::join(inc.gpus, ","));
    by_target[key].push_back(&inc);
  }
  for (const auto& [key, incs] : by_target) out.push_back(aer_finding(a, incs));
  hung_task_findings(a, out);
  sxid_findings(a, out);
  simple_findings(a, out);
}

}  // namespace cardiac::doctor::kernel_detail
