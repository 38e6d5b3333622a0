// SPDX-License-Identifier: Apache-2.0
// The one home of GPU-fault knowledge: the Xid catalog (meaning, severity, action, whether it
// fences the GPU, its fault class), the fault classes of kernel-log events (fallen off the bus,
// reset required, NVLink fatal, SXid fatal) and the NVML readings that fence a GPU (lost,
// double-bit ECC, row-remap failure). Rules, doctor, queue and the Prometheus export read it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/severity.h"
#include "kmsg/event.h"
#include "nvml/gpu.h"

namespace cardiac::health {

// What an operator does first about an Xid. One class per kind of remedy, not per Xid.
enum class XidAction {
  kIgnore,            // informational: nothing to do unless it repeats
  kCheckApp,          // the application is the likely cause: look at its code, inputs, versions
  kRestartApp,        // the error was contained to one application: restart it
  kResetGpu,          // the GPU needs a reset (nvidia-smi -r) before it is usable again
  kReboot,            // the GPU is lost to the driver: reboot the machine
  kInspectHardware,   // a hardware fault: cross-check the card, then RMA
  kCheckMechanicals,  // cables, seating, power connectors
  kFollowOther,       // a consequence of another error: act on that one
  kInvestigate,       // driver or firmware: collect nvidia-bug-report.sh, update, contact support
};

std::string_view xid_action_name(XidAction a);  // "ignore", "check_app", "reset_gpu", ...

// Kernel-log faults that page someone. One alert per (GPU, class) while the class keeps
// occurring, whatever the number of lines.
enum class FaultClass {
  kNone,           // not alert-worthy by itself (the doctor still explains it)
  kCriticalXid,    // an Xid of critical severity not covered by a class below
  kFallenOffBus,   // Xid 79 or the driver's "GPU has fallen off the bus"
  kResetRequired,  // the driver's non-Xid "GPU needs to be reset" lines
  kNvlinkFatal,    // Xid 74 or a non-Xid NVLink line that says fatal
  kSxidFatal,      // a fatal NVSwitch SXid (the bus id is the switch's, not a GPU's)
};

struct FaultClassInfo {
  FaultClass fault_class = FaultClass::kNone;
  std::string_view name;         // "xid_critical", … (the `class` label, the default rule's stem)
  std::string_view rule_metric;  // the rule engine's counter, "gpu_fault_xid_critical_total"
  std::string_view meaning;      // for descriptions: "a critical Xid"
  Severity severity = Severity::kCritical;
};

// The alert-worthy classes (kNone excluded), in a fixed order.
std::span<const FaultClassInfo> fault_classes();
std::string_view fault_class_name(FaultClass c);  // "none" for kNone

struct XidInfo {
  int code = 0;
  std::string_view meaning;  // "GPU has fallen off the bus"
  std::string_view cause;    // typical cause in plain words
  XidAction action = XidAction::kInvestigate;
  Severity severity = Severity::kWarning;
  bool hardware = false;  // the hardware (card, link, power) rather than driver or firmware
  // The card itself is suspect on the first occurrence (plan a cross-check: 48, 79, 95, …).
  bool suspect_card = false;
  // The card becomes suspect when the same Xid comes back after a reboot (94, 92, 13, …):
  // a reboot clears driver and application state, so what survives it points at the card.
  bool suspect_on_repeat = false;
  // An application triggers it (13, 31, 43): the process named on the line matters.
  bool app_error = false;
  // Follows another Xid on the same GPU and carries no cause of its own (45, 154).
  bool follow_on = false;
  // The GPU gets no new work until someone clears its fence (needs a reset or reboot).
  bool fences = false;
  // The driver may follow it with a non-Xid "GPU needs to be reset" line about the same fault.
  bool reset_line_joins = false;
  FaultClass fault_class = FaultClass::kNone;
  // The next steps in order, in plain words. "{gpu}" stands for the GPU's label and "{id}" for
  // what nvidia-smi -i accepts (index or bus id); the doctor fills both in.
  std::array<std::string_view, 3> steps{};
  bool known = true;  // false for the generic entry of a code not in the table
};

// The entry for `code`; for a code not in the table a generic entry (warning, driver,
// investigate) whose text names the code's lookup in NVIDIA's catalog. Never fails.
XidInfo lookup_xid(int code);

// Every entry of the table, by code (for docs and tests).
std::span<const XidInfo> xid_catalog();

// The codes of the table with `fault_class`, ascending.
std::vector<int> xids_of_class(FaultClass c);

// The alert class of one kernel-log event (kNone for the rest).
FaultClass fault_class_of(const kmsg::KernelEvent& e);

// Xid counts by (PCI bus id as logged, Xid), as the agent keeps them.
using XidCounts = std::map<std::pair<std::string, int>, std::uint64_t>;
// Kernel-log fault counts by (PCI bus id as logged, class), kNone never stored.
using FaultCounts = std::map<std::pair<std::string, FaultClass>, std::uint64_t>;

// Memory-repair limits (DCGM's health watches), read by status and the doctor alike.
inline constexpr unsigned kMaxRetiredPages = 63;           // DCGM_LIMIT_MAX_RETIRED_PAGES: fail
inline constexpr unsigned kUncorrectableRemapsWarn = 512;  // DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE

// Why this GPU must not get new work (nullopt: nothing critical): NVML says lost, reset
// required, erroring or unresponsive; a volatile double-bit ECC error (any: one is enough);
// a row-remap failure; or a fencing Xid counted on its PCI bus.
std::optional<std::string> fence_reason(const nvml::GpuReading& g, const XidCounts& xids);

}  // namespace cardiac::health
