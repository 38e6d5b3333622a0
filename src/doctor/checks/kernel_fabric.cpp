// SPDX-License-Identifier: Apache-2.0
// The fabric between GPUs and hosts: NVSwitch SXids, Fabric Manager errors, the driver's
// non-Xid NVLink lines and mlx5/InfiniBand NIC errors and link downs.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/format.h"
#include "doctor/checks/kernel_analysis.h"

namespace cardiac::doctor::kernel_detail {

void sxid_findings(const Analysis& a, std::vector<Finding>& out) {
  std::map<std::pair<std::string, int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind == kmsg::EventKind::kSxid && e.xid) groups[{e.pci_bus_id, *e.xid}].push_back(i);
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
void fabric_findings(const Analysis& a, std::vector<Finding>& out) {
  std::map<std::pair<kmsg::EventKind, std::string>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind == kmsg::EventKind::kFabricManager) groups[{e.kind, ""}].push_back(i);
    if (e.kind == kmsg::EventKind::kNvlink || e.kind == kmsg::EventKind::kIb)
      groups[{e.kind, e.pci_bus_id}].push_back(i);
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
    f.id = fmt::format("kernel.{}", kmsg::event_kind_name(kind));
    const std::string seen = fmt::format("{}{}", times_text(events.size()), span_text(a, events));
    const std::string first = a.ev(events.front()).message;
    if (kind == kmsg::EventKind::kFabricManager) {
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
    } else if (kind == kmsg::EventKind::kNvlink) {
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

}  // namespace cardiac::doctor::kernel_detail
