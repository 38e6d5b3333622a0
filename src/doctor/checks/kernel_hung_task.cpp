// SPDX-License-Identifier: Apache-2.0
// Hung tasks: tasks blocked inside the nvidia module (a driver fault) apart from the other
// blocked tasks (I/O, NFS, memory), and the hung nvidia tasks an Xid finding mentions.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/format.h"
#include "doctor/checks/kernel_analysis.h"
#include "doctor/kernel_log.h"
#include "kmsg/context.h"
#include "kmsg/record.h"

namespace cardiac::doctor::kernel_detail {

std::vector<std::size_t> hung_nvidia_tasks(const Analysis& a, std::size_t boot) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind != kmsg::EventKind::kHungTask || a.boot_of[i] != boot) continue;
    if (trace_through_nvidia(a.context(i)) || e.process.rfind("nvidia", 0) == 0) out.push_back(i);
  }
  return out;
}

void hung_task_findings(const Analysis& a, std::vector<Finding>& out) {
  std::vector<std::size_t> nvidia;
  std::vector<std::size_t> other;
  std::vector<std::size_t> traced;
  for (std::size_t i = 0; i < a.in.events.size(); ++i) {
    const auto& e = a.ev(i);
    if (e.kind != kmsg::EventKind::kHungTask) continue;
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
      const bool lost =
          (e.kind == kmsg::EventKind::kXid && (e.xid == 119 || e.xid == 79 || e.xid == 120)) ||
          e.kind == kmsg::EventKind::kGspTimeout || e.kind == kmsg::EventKind::kFallenOffBus;
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

}  // namespace cardiac::doctor::kernel_detail
