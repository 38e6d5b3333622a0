// SPDX-License-Identifier: Apache-2.0
// What the kernel-log check's fault families share (kernel.cpp runs them in turn): the analysis
// of one log, the AER incidents, each family's entry point and the wording helpers
// (kernel_analysis.cpp). Not a public API.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/time.h"
#include "doctor/finding.h"
#include "doctor/gpu_map.h"
#include "doctor/input.h"

namespace cardiac::doctor::kernel_detail {

// What the kernel checks share: the input, who is which GPU, which boot each event is in.
struct Analysis {
  explicit Analysis(const DoctorInput& input);

  [[nodiscard]] const kmsg::KernelEvent& ev(std::size_t i) const { return in.events[i]; }
  // Context lines of event i (empty when none).
  [[nodiscard]] const std::vector<std::string>& context(std::size_t i) const;
  // Messages of event i's context lines, their time prefixes removed.
  [[nodiscard]] std::vector<std::string> context_messages(std::size_t i) const;
  // Every bus id known to be a GPU: NVML, the PCI bus, and the driver's own lines.
  [[nodiscard]] const std::vector<std::string>& gpu_buses() const { return gpu_buses_; }
  // The GPUs at or below PCI device `device` (their sysfs path passes through it), or the
  // device itself when it is a GPU. `resolved` tells whether sysfs answered for any GPU.
  [[nodiscard]] std::vector<std::string> gpus_behind(const std::string& device,
                                                     bool& resolved) const;

  const DoctorInput& in;
  GpuMap map;
  std::vector<std::size_t> boot_of;  // event index → boot number (0 = before the first seen)

 private:
  std::vector<std::string> gpu_buses_;
  std::map<std::string, std::string> sysfs_path_;  // GPU bus id → its sysfs device path
  std::map<std::size_t, const std::vector<std::string>*> context_;
};

// A PCIe AER report: one or two kernel lines ("error received" + "PCIe Bus Error") and their
// detail lines, with the GPU(s) behind the erring device.
struct AerIncident {
  std::vector<std::size_t> events;
  std::string device;                         // the erring device (a port or an endpoint)
  std::string reporter;                       // the port that reported it, when the line says
  std::optional<kmsg::AerSeverity> severity;  // the worst of its lines
  std::string type;                           // "Data Link Layer", … when the line says
  std::vector<std::string> details;           // "Surprise Down Error (First)", …
  std::vector<std::string> gpus;              // bus ids of the GPUs behind `device`
  // How `gpus` was found: "sysfs" (the GPU's path passes through the device), "driver line"
  // ("nvidia <bus>: device has no AER-aware driver"), "timing" (the GPU lost its link right
  // after), or "" when no GPU is behind it.
  std::string linked_by;
  bool folded = false;  // told by an Xid finding already
};

// A fatal AER on the GPU's link at most this long before the driver lost it tells the story.
constexpr DurationNs kAerWindow = 60 * kNsPerSec;  // Surprise Down → Xid 79

// ---- PCIe AER (kernel_aer.cpp)

std::vector<AerIncident> aer_incidents(const Analysis& a);
// " Just before, PCIe port … reported …": the fatal AER told as the start of a lost GPU's story.
std::string aer_story(const AerIncident& inc);
// One finding per GPU (or device) for the incidents no Xid or fallen-off-bus finding told.
void aer_findings(const Analysis& a, const std::vector<AerIncident>& aer,
                  std::vector<Finding>& out);

// ---- Xids (kernel_xid.cpp)

struct XidGroup {
  std::string bus;
  int xid = 0;
  std::vector<std::size_t> roots;
  std::vector<std::size_t> follow_ons;  // 45, 154 after this Xid
  std::vector<std::size_t> related;     // non-Xid driver lines about the same fault
  std::vector<const AerIncident*> aer;  // the PCIe story before it (Xid 79)
};

using GroupMap = std::map<std::pair<std::string, int>, XidGroup>;

GroupMap group_xids(const Analysis& a);
// Non-Xid driver lines that tell the same story as an Xid on that GPU join its finding; the
// rest are returned for findings of their own.
std::vector<std::size_t> fold_related(const Analysis& a, GroupMap& groups);
// Fatal AER incidents on the link to the group's GPU shortly before its first Xid.
void attach_aer(const Analysis& a, std::vector<AerIncident>& aer, XidGroup& g);
Finding xid_finding(const Analysis& a, const XidGroup& g);

// ---- The driver's other GPU messages (kernel_driver_messages.cpp)

// kernel.fallen_off_bus, telling (and folding) a fatal AER just before it.
Finding fallen_finding(const Analysis& a, const std::string& bus,
                       const std::vector<std::size_t>& events, std::vector<AerIncident>& aer);
// kernel.gsp_timeout, kernel.init_failure or kernel.reset_required for `kind`.
Finding driver_message_finding(const Analysis& a, kmsg::EventKind kind, const std::string& bus,
                               const std::vector<std::size_t>& events, bool also_fell_off);

// ---- Hung tasks (kernel_hung_task.cpp)

// The hung tasks in boot `boot` blocked inside the nvidia module.
std::vector<std::size_t> hung_nvidia_tasks(const Analysis& a, std::size_t boot);
void hung_task_findings(const Analysis& a, std::vector<Finding>& out);

// ---- NVSwitch, Fabric Manager, NVLink, InfiniBand (kernel_fabric.cpp)

void sxid_findings(const Analysis& a, std::vector<Finding>& out);
// Fabric Manager, non-Xid NVLink and InfiniBand lines: one finding per kind and device.
void fabric_findings(const Analysis& a, std::vector<Finding>& out);

// ---- small helpers (kernel_analysis.cpp) ----

// Up to `max` log evidence lines for the events, first ones first and the last one kept.
void add_log_evidence(Finding& f, const Analysis& a, const std::vector<std::size_t>& events,
                      std::size_t max = 5);
// Evidence for event `event`: its raw line, or `text` (a context line) when given.
Evidence log_evidence(const Analysis& a, std::size_t event, std::string_view text = {});
// " between <first> and <last>", " at <time>", or "" when no event has a time.
std::string span_text(const Analysis& a, const std::vector<std::size_t>& events);
std::string times_text(std::size_t n);  // "once", "twice", "5 times"
// A driver line quoted as the end of a sentence: its own full stop ends it ("…off the bus.").
std::string quoted_sentence(std::string_view line);
// What `nvidia-smi -i` accepts for the GPU: its index, else its bus id, else "<GPU>".
std::string cli_id(const GpuRef& g);
// A catalog step with "{gpu}" and "{id}" filled in.
std::string fill_step(std::string_view step, const GpuRef& g);
// "GPU 3 (0000:3b:00.0)", or "the GPU" when nothing is known.
std::string gpu_label(const GpuRef& g);
// "python (pid 1234), nvidia-smi (pid 99)" for the processes on the events, at most 3.
std::string process_list(const Analysis& a, const std::vector<std::size_t>& events);
// Distinct boots the events fall in.
std::vector<std::size_t> boots_of(const Analysis& a, const std::vector<std::size_t>& events);
// Whether event `later` follows `earlier` closely: same boot and, when both have times, within
// `window`; without times, within `max_events` events.
bool follows_closely(const Analysis& a, std::size_t earlier, std::size_t later, DurationNs window,
                     std::size_t max_events);

}  // namespace cardiac::doctor::kernel_detail
