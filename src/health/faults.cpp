// SPDX-License-Identifier: Apache-2.0
// The one home of GPU-fault knowledge. The Xid table: meanings and actions follow NVIDIA's Xid
// catalog as summarised in shared/reference/xid-and-kmsg.md section 7; severities are cardiac's
// own (critical = the GPU is unusable or its data is wrong until someone acts).
#include "health/faults.h"

#include <algorithm>
#include <cctype>

#include "core/format.h"
#include "nvml/pci.h"

namespace cardiac::health {
namespace {

constexpr unsigned kCard = 1;    // suspect_card
constexpr unsigned kRepeat = 2;  // suspect_on_repeat
constexpr unsigned kApp = 4;     // app_error
constexpr unsigned kFollow = 8;  // follow_on

// Xids after which a GPU gets no new work until someone clears its fence: the ones NVIDIA's
// catalog says need a GPU reset or reboot (fallen off the bus, uncontained or unrecovered ECC,
// GSP timeouts and errors, micro-controller halt, row-remap failure, init failure).
constexpr int kFencing[] = {46, 48, 62, 64, 79, 95, 119, 120, 140, 143};
// Xids the driver follows with a non-Xid "GPU needs to be reset" line about the same fault.
constexpr int kResetLine[] = {46, 48, 62, 74, 79, 95, 119, 120, 140};

template <std::size_t N>
constexpr bool in(const int (&list)[N], int code) {
  for (int c : list) {
    if (c == code) return true;
  }
  return false;
}

constexpr XidInfo entry(int code, std::string_view meaning, std::string_view cause,
                        XidAction action, Severity severity, bool hardware, unsigned flags,
                        std::array<std::string_view, 3> steps) {
  XidInfo x;
  x.code = code;
  x.meaning = meaning;
  x.cause = cause;
  x.action = action;
  x.severity = severity;
  x.hardware = hardware;
  x.fences = in(kFencing, code);
  x.reset_line_joins = in(kResetLine, code);
  x.fault_class = code == 79                        ? FaultClass::kFallenOffBus
                  : code == 74                      ? FaultClass::kNvlinkFatal
                  : severity == Severity::kCritical ? FaultClass::kCriticalXid
                                                    : FaultClass::kNone;
  x.suspect_card = (flags & kCard) != 0;
  x.suspect_on_repeat = (flags & kRepeat) != 0;
  x.app_error = (flags & kApp) != 0;
  x.follow_on = (flags & kFollow) != 0;
  x.steps = steps;
  return x;
}

using A = XidAction;
constexpr auto kInfo = Severity::kInfo;
constexpr auto kWarn = Severity::kWarning;
constexpr auto kCrit = Severity::kCritical;
constexpr bool kHw = true;
constexpr bool kDrv = false;

// Steps shared by several codes.
constexpr std::string_view kReset =
    "Stop the processes on {gpu}, then reset it: nvidia-smi -r -i {id}";
constexpr std::string_view kRebootIfReset = "If the reset fails or hangs, reboot the machine";
constexpr std::string_view kBugReport =
    "Collect nvidia-bug-report.sh before rebooting, and update the driver if a newer one fixes it";
constexpr std::string_view kCrossCheck =
    "If it comes back after the reboot, cross-check the card in another slot or server and RMA "
    "it if the fault follows the card";
constexpr std::string_view kNvlinkSteps =
    "Check the NVLink state: nvidia-smi nvlink --status -i {id} and nvidia-smi nvlink -e -i {id}";

constexpr XidInfo kTable[] = {
    entry(8, "GPU stopped processing (idle timeout)",
          "an application or the driver hung on the GPU", A::kRestartApp, kWarn, kDrv, kRepeat,
          {"Restart the application that used {gpu}", kBugReport, {}}),
    entry(13, "graphics engine exception",
          "usually the application: an out-of-bounds access or illegal instruction; rarely the GPU",
          A::kCheckApp, kWarn, kDrv, kApp | kRepeat,
          {"Check the application named on the line (run it under compute-sanitizer)",
           "If different programs hit it on {gpu} only, run the field diagnostic (dcgmi diag -r 3)",
           {}}),
    entry(31, "GPU memory page fault (MMU fault)",
          "usually the application touched an invalid address; can be the driver or the GPU",
          A::kCheckApp, kWarn, kDrv, kApp | kRepeat,
          {"Check the application named on the line (run it under compute-sanitizer)",
           "If it repeats on {gpu} with different programs, run the field diagnostic (dcgmi diag "
           "-r 3)",
           {}}),
    entry(32, "invalid or corrupted push buffer",
          "a corrupted command stream: PCIe/DMA signal quality, or the driver", A::kRestartApp,
          kWarn, kHw, kRepeat,
          {"Restart the application",
           "Check the PCIe link of {gpu} (cardiac status: width and speed)",
           "If it repeats, reseat the card and check its riser"}),
    entry(38, "driver firmware error", "a GPU firmware (FECS) watchdog fired", A::kInvestigate,
          kWarn, kDrv, kRepeat,
          {kBugReport, "Reset the GPU if applications on it fail: nvidia-smi -r -i {id}", {}}),
    entry(43, "GPU stopped processing (channel reset)",
          "an application fault; the GPU itself stays healthy", A::kCheckApp, kInfo, kDrv, kApp,
          {"Check the application named on the line; the GPU needs nothing", {}, {}}),
    entry(45, "preemptive cleanup, due to previous errors",
          "the driver stopped a process's work: the process was killed or another Xid came first",
          A::kFollowOther, kInfo, kDrv, kFollow,
          {"Act on the Xid that came before it on the same GPU, if any",
           "Alone on an NVSwitch system: check that nvidia-fabricmanager is running",
           {}}),
    entry(46, "GPU stopped processing", "the driver or the GPU stopped making progress",
          A::kResetGpu, kCrit, kDrv, kRepeat, {kReset, kRebootIfReset, kBugReport}),
    entry(48, "double-bit ECC error (DBE)",
          "an uncorrectable GPU memory error: the memory is faulty", A::kInspectHardware, kCrit,
          kHw, kCard,
          {kReset, "Check row remapping: nvidia-smi -q -d ROW_REMAPPER -i {id} (pending or failed)",
           kCrossCheck}),
    entry(54, "auxiliary power not connected", "a GPU power cable is missing or not seated",
          A::kCheckMechanicals, kCrit, kHw, kCard,
          {"Power the machine off and check the GPU's auxiliary power cables and connectors",
           "Check the PSU feeding that riser",
           {}}),
    entry(61, "internal micro-controller breakpoint/warning",
          "GPU firmware; on some SKUs a power brake (EDPP)", A::kInvestigate, kWarn, kHw, kRepeat,
          {"Watch for Xid 62 on the same GPU", "Check power and cooling of {gpu}", kBugReport}),
    entry(62, "internal micro-controller halt",
          "GPU firmware or hardware; thermal on some SKUs; often followed by Xid 154 (reset "
          "required)",
          A::kResetGpu, kCrit, kHw, kCard, {kReset, kRebootIfReset, kCrossCheck}),
    entry(63, "ECC page retirement or row remapping recorded",
          "a correctable memory repair was recorded; it takes effect at the next GPU reset",
          A::kIgnore, kInfo, kHw, kRepeat,
          {"Reset {gpu} at the next idle moment so the repair takes effect: nvidia-smi -r -i {id}",
           {},
           {}}),
    entry(64, "page retirement or row remapping failure",
          "the memory repair failed or is exhausted: an RMA criterion", A::kInspectHardware, kCrit,
          kHw, kCard,
          {kReset, "Check row remapping: nvidia-smi -q -d ROW_REMAPPER -i {id}",
           "Plan to replace the card (RMA) once the remap failure is confirmed"}),
    entry(74, "NVLink error", "an NVLink, bridge or NVSwitch fault, or the peer GPU failed",
          A::kResetGpu, kCrit, kHw, kCard,
          {kNvlinkSteps, kReset,
           "If it repeats on the same link, have the baseboard or bridge checked"}),
    entry(79, "GPU has fallen off the bus",
          "the PCIe link to the GPU was lost: power, heat, the slot or riser, or the card",
          A::kReboot, kCrit, kHw, kCard,
          {"Reboot the machine: the driver cannot get the GPU back without one",
           "Check the card's power cables, seating and riser, and the inlet temperature",
           kCrossCheck}),
    entry(92, "high single-bit ECC error rate", "GPU memory is degrading", A::kIgnore, kWarn, kHw,
          kRepeat,
          {"Watch the corrected ECC counters of {gpu}: nvidia-smi -q -d ECC -i {id}",
           "If the rate keeps growing, plan to replace the card",
           {}}),
    entry(93, "InfoROM wear limit reached", "the InfoROM cannot record much more", A::kIgnore,
          kWarn, kHw, 0, {"Update the GPU firmware (InfoROM) if the vendor offers one", {}, {}}),
    entry(94, "contained ECC error",
          "an uncorrectable memory error that the GPU contained to one application", A::kRestartApp,
          kWarn, kHw, kRepeat,
          {"Restart the application that was running on {gpu}",
           "Reset {gpu} when it is idle so the row remap takes effect: nvidia-smi -r -i {id}",
           "If it comes back after a reboot, treat the card as suspect and cross-check it"}),
    entry(95, "uncontained ECC error",
          "an uncorrectable memory error that affected every application on the GPU", A::kResetGpu,
          kCrit, kHw, kCard, {kReset, kRebootIfReset, kCrossCheck}),
    entry(109, "context switch timeout", "an application or the driver stopped responding",
          A::kRestartApp, kWarn, kDrv, kRepeat,
          {"Restart the application named on the line",
           "If it repeats, reset {gpu}: nvidia-smi -r -i {id}", kBugReport}),
    entry(119, "GSP RPC timeout",
          "the GPU's firmware (GSP) stopped answering the driver; nvidia-smi and CUDA calls hang",
          A::kResetGpu, kCrit, kDrv, kCard,
          {kReset, kRebootIfReset,
           "Collect nvidia-bug-report.sh; if it repeats, update the driver or turn GSP off "
           "(NVreg_EnableGpuFirmware=0) where the GPU allows it"}),
    entry(120, "GSP error", "the GPU's firmware (GSP) reported a fault", A::kResetGpu, kCrit, kDrv,
          kCard, {kReset, kRebootIfReset, kBugReport}),
    entry(121, "C2C link error", "the chip-to-chip link (Grace Hopper) reported an error",
          A::kInspectHardware, kCrit, kHw, kCard,
          {"Reboot the machine",
           "If it repeats, contact the system vendor: the module needs service",
           {}}),
    entry(136, "ALI link training failed", "an NVLink did not train: link signal integrity",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(137, "NVLink privilege (FLA) error", "an application or the driver misused NVLink memory",
          A::kCheckApp, kWarn, kDrv, kApp, {"Check the application named on the line", {}, {}}),
    entry(140, "unrecovered ECC error",
          "an uncorrectable GPU memory error the GPU could not recover", A::kResetGpu, kCrit, kHw,
          kCard, {kReset, kRebootIfReset, kCrossCheck}),
    entry(143, "GPU initialization failure", "the GPU failed to initialise: hardware",
          A::kInspectHardware, kCrit, kHw, kCard,
          {"Reboot the machine", "Reseat the card and check its power", kCrossCheck}),
    entry(144, "NVLink SAW error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(145, "NVLink RLW error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(146, "NVLink TLW error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(147, "NVLink TREX error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(148, "NVLink NVLPW_CTRL error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(149, "NVLink NETIR error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(150, "NVLink MSE error", "NVLink5 fabric (sub-code in the line says fatal or not)",
          A::kResetGpu, kWarn, kHw, kRepeat, {kNvlinkSteps, kReset, {}}),
    entry(154, "GPU recovery action changed",
          "the driver says what the GPU now needs (reset or reboot) after another error",
          A::kFollowOther, kInfo, kDrv, kFollow,
          {"Do what the line asks for (GPU reset or reboot)",
           "Act on the Xid that came before it on the same GPU",
           {}}),
    entry(155, "NVLink software-defined error", "driver software on the NVLink path", A::kResetGpu,
          kWarn, kDrv, kRepeat, {kReset, kBugReport, {}}),
    entry(
        156, "resource retirement event", "a memory or resource repair was recorded", A::kResetGpu,
        kWarn, kHw, kRepeat,
        {"Reset {gpu} when it is idle so the repair takes effect: nvidia-smi -r -i {id}", {}, {}}),
    entry(157, "resource retirement failure", "a memory or resource repair could not be recorded",
          A::kIgnore, kInfo, kHw, kRepeat,
          {"If it repeats, collect nvidia-bug-report.sh and contact support", {}, {}}),
    entry(158, "GPU fatal timeout", "the GPU or driver timed out fatally", A::kResetGpu, kCrit,
          kDrv, kRepeat, {kReset, kRebootIfReset, kBugReport}),
    entry(162, "power smoothing circuitry engaged", "power smoothing turned on (informational)",
          A::kIgnore, kInfo, kHw, 0, {}),
    entry(163, "power smoothing circuitry disengaged", "power smoothing turned off (informational)",
          A::kIgnore, kInfo, kHw, 0, {}),
    entry(164, "power smoothing lifetime low", "the power smoothing circuitry is wearing out",
          A::kIgnore, kInfo, kHw, 0, {"Plan service of the card's power smoothing", {}, {}}),
    entry(165, "power smoothing lifetime exhausted", "the power smoothing circuitry is worn out",
          A::kInspectHardware, kWarn, kHw, 0,
          {"Contact the vendor: the card's power smoothing needs service", {}, {}}),
    entry(167, "PCIe fatal timeout", "a PCIe transaction to the GPU timed out fatally", A::kReboot,
          kCrit, kHw, kRepeat,
          {"Reboot the machine", "Check the card's seating and riser", kCrossCheck}),
    entry(171, "uncorrectable DRAM error (detail)",
          "details of an uncorrectable memory error (Xid 48)", A::kFollowOther, kWarn, kHw, kCard,
          {"Act on the Xid 48 that comes with it", {}, {}}),
    entry(172, "uncorrectable SRAM error", "an uncorrectable error in on-chip memory", A::kReboot,
          kWarn, kHw, kRepeat, {"Reboot the machine", kCrossCheck, {}}),
};

}  // namespace

std::string_view xid_action_name(XidAction a) {
  switch (a) {
    case XidAction::kIgnore:
      return "ignore";
    case XidAction::kCheckApp:
      return "check_app";
    case XidAction::kRestartApp:
      return "restart_app";
    case XidAction::kResetGpu:
      return "reset_gpu";
    case XidAction::kReboot:
      return "reboot";
    case XidAction::kInspectHardware:
      return "inspect_hardware";
    case XidAction::kCheckMechanicals:
      return "check_mechanicals";
    case XidAction::kFollowOther:
      return "follow_other";
    case XidAction::kInvestigate:
      return "investigate";
  }
  return "investigate";
}

XidInfo lookup_xid(int code) {
  const auto* it = std::lower_bound(std::begin(kTable), std::end(kTable), code,
                                    [](const XidInfo& x, int c) { return x.code < c; });
  if (it != std::end(kTable) && it->code == code) return *it;
  XidInfo generic;
  generic.code = code;
  generic.meaning = "an Xid not in cardiac's catalog";
  generic.cause = "see NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) for this code";
  generic.action = XidAction::kInvestigate;
  generic.severity = Severity::kWarning;
  generic.hardware = false;
  generic.suspect_on_repeat = true;
  generic.steps = {"Look the code up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors)",
                   kBugReport,
                   {}};
  generic.known = false;
  return generic;
}

std::span<const XidInfo> xid_catalog() {
  return kTable;
}

namespace {

constexpr FaultClassInfo kClasses[] = {
    {FaultClass::kCriticalXid, "xid_critical", "gpu_fault_xid_critical_total", "a critical Xid",
     Severity::kCritical},
    {FaultClass::kFallenOffBus, "fallen_off_bus", "gpu_fault_fallen_off_bus_total",
     "the GPU fell off the bus", Severity::kCritical},
    {FaultClass::kResetRequired, "reset_required", "gpu_fault_reset_required_total",
     "the driver asks for a GPU reset", Severity::kCritical},
    {FaultClass::kNvlinkFatal, "nvlink_fatal", "gpu_fault_nvlink_fatal_total",
     "a fatal NVLink error", Severity::kCritical},
    {FaultClass::kSxidFatal, "sxid_fatal", "nvswitch_sxid_fatal_total", "a fatal NVSwitch SXid",
     Severity::kCritical},
};

bool says_fatal(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("fatal") != std::string::npos && lower.find("non-fatal") == std::string::npos &&
         lower.find("non fatal") == std::string::npos &&
         lower.find("nonfatal") == std::string::npos;
}

}  // namespace

std::span<const FaultClassInfo> fault_classes() {
  return kClasses;
}

std::string_view fault_class_name(FaultClass c) {
  for (const auto& i : kClasses) {
    if (i.fault_class == c) return i.name;
  }
  return "none";
}

std::vector<int> xids_of_class(FaultClass c) {
  std::vector<int> out;
  for (const auto& x : kTable) {
    if (x.fault_class == c) out.push_back(x.code);
  }
  return out;
}

FaultClass fault_class_of(const kmsg::KernelEvent& e) {
  if (e.kind == kmsg::EventKind::kXid && e.xid) return lookup_xid(*e.xid).fault_class;
  if (e.kind == kmsg::EventKind::kFallenOffBus) return FaultClass::kFallenOffBus;
  if (e.kind == kmsg::EventKind::kResetRequired) return FaultClass::kResetRequired;
  if (e.kind == kmsg::EventKind::kNvlink && says_fatal(e.message)) return FaultClass::kNvlinkFatal;
  if (e.kind == kmsg::EventKind::kSxid && e.severity == "fatal") return FaultClass::kSxidFatal;
  return FaultClass::kNone;
}

std::optional<std::string> fence_reason(const nvml::GpuReading& g, const XidCounts& xids) {
  using nvml::DeviceHealth;
  switch (g.health) {
    case DeviceHealth::kLost:
    case DeviceHealth::kResetRequired:
    case DeviceHealth::kError:
    case DeviceHealth::kUnresponsive:
      return fmt::format("GPU {}: {}", nvml::device_health_name(g.health),
                         g.health_detail.empty() ? "NVML" : g.health_detail);
    case DeviceHealth::kOk:
    case DeviceHealth::kNotSampled:
      break;
  }
  // One double-bit error is enough: the data on the GPU can no longer be trusted (DCGM's
  // DBE health watch fails on the first one too).
  if (g.ecc_volatile_uncorrected.value_or(0) > 0) {
    return fmt::format("{} uncorrectable (double-bit) ECC errors since the last reset",
                       *g.ecc_volatile_uncorrected);
  }
  if (g.remapped_rows_failure.value_or(false)) return std::string("row remapping failed");
  // Asked for every GPU at every queue pass: the bus id is spelled out only when there are Xids.
  if (!g.pci_bus_id.empty() && !xids.empty()) {
    const std::string bus = nvml::normalize_pci_bus_id(g.pci_bus_id);
    for (const auto& [key, count] : xids) {
      if (count == 0 || !lookup_xid(key.second).fences) continue;
      if (nvml::normalize_pci_bus_id(key.first) == bus) {
        return fmt::format("Xid {} on {}", key.second, bus);
      }
    }
  }
  return std::nullopt;
}

}  // namespace cardiac::health
