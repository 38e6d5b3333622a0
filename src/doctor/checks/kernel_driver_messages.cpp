// SPDX-License-Identifier: Apache-2.0
// The driver's other messages about a GPU, when no Xid finding told them: fallen off the bus
// (with the fatal AER just before it), GSP firmware timeouts, initialisation failures and
// "needs a reset".
#include <algorithm>
#include <string>
#include <vector>

#include "core/format.h"
#include "doctor/checks/kernel_analysis.h"

namespace cardiac::doctor::kernel_detail {

Finding fallen_finding(const Analysis& a, const std::string& bus,
                       const std::vector<std::size_t>& events, std::vector<AerIncident>& aer) {
  Finding f;
  f.id = "kernel.fallen_off_bus";
  f.gpu = a.map.by_bus_id(bus);
  f.category = Category::kHardware;
  f.severity = Severity::kCritical;
  f.confidence = Confidence::kHigh;
  const std::string label = bus.empty() ? "A GPU" : gpu_label(f.gpu);
  f.title = bus.empty() ? "A GPU has fallen off the bus" : "Fallen off the bus";
  f.explanation = fmt::format(
      "The driver reported {} {}{} that the GPU no longer answers on PCIe (its registers read "
      "all ones): the link to it is down and nothing can use it until the machine reboots.",
      label, times_text(events.size()), span_text(a, events));
  for (auto& inc : aer) {
    if (inc.folded || inc.severity != kmsg::AerSeverity::kUncorrectedFatal || bus.empty()) continue;
    if (std::find(inc.gpus.begin(), inc.gpus.end(), bus) == inc.gpus.end()) continue;
    if (!follows_closely(a, inc.events.front(), events.front(), kAerWindow, 20)) continue;
    inc.folded = true;
    f.explanation += aer_story(inc);
    f.evidence.push_back(log_evidence(a, inc.events.front()));
  }
  add_log_evidence(f, a, events, 4);
  f.actions = {"Reboot the machine: the driver cannot get the GPU back without one",
               fill_step("Check {gpu}'s power cables, seating and riser, and the inlet "
                         "temperature",
                         f.gpu),
               "If it falls off again after the reboot, cross-check the card in another slot or "
               "server and RMA it if the fault follows the card"};
  return f;
}

Finding driver_message_finding(const Analysis& a, kmsg::EventKind kind, const std::string& bus,
                               const std::vector<std::size_t>& events, bool also_fell_off) {
  Finding f;
  f.gpu = a.map.by_bus_id(bus);
  f.severity = Severity::kCritical;
  f.category = Category::kDriver;
  f.confidence = Confidence::kHigh;
  const std::string label = bus.empty() ? "a GPU" : gpu_label(f.gpu);
  const std::string seen = fmt::format("{}{}", times_text(events.size()), span_text(a, events));
  const std::string first = a.ev(events.front()).message;
  if (kind == kmsg::EventKind::kGspTimeout) {
    f.id = "kernel.gsp_timeout";
    f.title = fmt::format("GSP firmware of {} stopped answering the driver", label);
    f.explanation = fmt::format(
        "The driver timed out waiting for the GPU's firmware (GSP) {} (\"{}\"). Until the GPU "
        "is reset, nvidia-smi, NVML and CUDA calls that touch it hang or fail.",
        seen, first);
    f.actions = {
        fill_step("Stop the processes on {gpu}, then reset it: nvidia-smi -r -i {id}", f.gpu),
        "If the reset fails or hangs, reboot the machine",
        "Collect nvidia-bug-report.sh; if it repeats, update the driver"};
  } else if (kind == kmsg::EventKind::kInitFailure) {
    f.id = "kernel.init_failure";
    if (also_fell_off) f.category = Category::kHardware;
    f.confidence = Confidence::kMedium;
    f.title = fmt::format("The driver could not initialise {}", label);
    f.explanation = fmt::format(
        "RmInitAdapter failed {} (\"{}\"): the driver did not bring the GPU up, so nvidia-smi "
        "will not list it or fails on it. {}",
        seen, first,
        also_fell_off ? "The same GPU also fell off the bus: the card or its slot is the "
                        "likely cause."
                      : "Common causes: a driver that does not match the kernel module or does "
                        "not support this GPU, a GPU that lost power, or a faulty card.");
    f.actions = {
        "Check that the loaded module matches the installed driver: cat "
        "/proc/driver/nvidia/version and nvidia-smi",
        "Reboot; if it persists, reseat the card and check its power cables",
        "If it still fails, cross-check the card in another slot or server"};
  } else {
    f.id = "kernel.reset_required";
    f.title = fmt::format("The driver says {} needs a reset", label);
    f.explanation = fmt::format(
        "The driver reported {} that the GPU needs a reset (\"{}\"); "
        "work on it fails until then.",
        seen, first);
    f.actions = {
        fill_step("Stop the processes on {gpu}, then reset it: nvidia-smi -r -i {id}", f.gpu),
        "If the reset fails or hangs, reboot the machine"};
  }
  add_log_evidence(f, a, events);
  return f;
}

}  // namespace cardiac::doctor::kernel_detail
