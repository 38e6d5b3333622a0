// SPDX-License-Identifier: Apache-2.0
// The kernel-log event model and the classifier that recognises GPU-relevant kernel messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kmsg/record.h"

namespace cardiac::kmsg {

// What a recognised kernel message is; the comment gives each one's name (event_kind_name).
// Listed in name order, so that maps keyed by kind iterate, and reports list, as they did when
// the kind was its name (a test holds the order).
enum class EventKind {
  kAer,            // "aer": PCIe AER report (severity set; pci_bus_id is the erring device)
  kFabricManager,  // "fabric_manager": an ERROR/FATAL line of Fabric Manager's log (severity
                   // "error" | "fatal"; xid holds the SXid number when the line names one)
  kFallenOffBus,   // "fallen_off_bus": the non-Xid "GPU has fallen off the bus" probe message
  kGpuMap,         // "gpu_map": "NVRM: GPU at PCI:<bdf>: GPU-<uuid>" (uuid set): bus id -> GPU
  kGspTimeout,     // "gsp_timeout": non-Xid GSP RPC timeout / rate-limit lines
  kHungTask,       // "hung_task": "INFO: task <comm>:<pid> blocked for more than N seconds."
  kIb,             // "ib": mlx5 (InfiniBand/RoCE NIC) errors and link-down lines
  kInitFailure,    // "init_failure": RmInitAdapter / rm_init_adapter failed
  kNvlink,         // "nvlink": non-Xid NVLink error lines
  kResetRequired,  // "reset_required": non-Xid NVRM lines saying the GPU needs a reset
  kSxid,           // "sxid": NVSwitch SXid (the SXid number is in `xid`)
  kXid,            // "xid": NVRM Xid line (xid set; pid/process when the driver knew the channel)
};

// The kind's name in JSON, the store, the doctor's evidence and reports ("fallen_off_bus"):
// the only place the names are written. parse_event_kind is its inverse (nullopt for any other
// text).
std::string_view event_kind_name(EventKind k);
std::optional<EventKind> parse_event_kind(std::string_view name);

// How bad a PCIe AER report is, mildest first; the comment gives its name (aer_severity_name,
// the one name table with parse_aer_severity, used where it is written to JSON).
enum class AerSeverity {
  kCorrected,            // "corrected"
  kUncorrectedNonFatal,  // "uncorrected_non_fatal"
  kUncorrectedFatal,     // "uncorrected_fatal"
};
std::string_view aer_severity_name(AerSeverity s);
std::optional<AerSeverity> parse_aer_severity(std::string_view name);

// One recognised kernel message.
struct KernelEvent {
  EventKind kind = EventKind::kXid;
  std::optional<int> xid;
  std::string pci_bus_id;  // normalised "0000:3b:00.0"; empty when the line names none
  std::optional<int> pid;
  std::string process;
  std::string message;  // the event text after the structured part (e.g. Xid description)
  std::optional<std::int64_t> time_ns;       // wall clock, ns since the UTC epoch
  std::optional<std::int64_t> monotonic_us;  // since boot
  std::string raw;                           // the whole input line, for evidence
  std::string uuid;                          // gpu_map: "GPU-2b7f..."
  std::string serial;  // gpu_map: the board serial from the "GPU Board Serial Number" line
                       // that follows it (filled by a reader that sees both lines)
  std::optional<AerSeverity> aer_severity;  // aer: always set
  std::string severity;  // sxid: "fatal" | "non_fatal" when the line says so; fabric_manager:
                         // "error" | "fatal"
  std::string reporter;  // aer: the port that reported ("0000:00:03.1")
  std::optional<int> gpu_instance;      // MIG "GPU-I:NN" inside the Xid parentheses
  std::optional<int> compute_instance;  // MIG "GPU-CI:NN"
};

// Recognises a kernel message (the text after any timestamp prefix). Returns nullopt for
// anything not in the list above, including garbage, truncated and binary input. Never throws
// except std::bad_alloc.
std::optional<KernelEvent> classify(std::string_view message);
// Longer input is not a kernel message (printk's own limit is 1 KiB): classify() refuses it.
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;

// Parses a line in any format parse_log_line() knows, classifies its message and fills
// time_ns/monotonic_us/raw. `boot_time_ns` (wall clock at boot) turns a monotonic stamp into
// time_ns when the line carries no wall time; pass nullopt to leave time_ns empty then.
std::optional<KernelEvent> classify_line(std::string_view line, int year_hint = 0,
                                         std::optional<std::int64_t> boot_time_ns = {});

// classify_line() for a line the caller already parsed; `raw` is the whole line.
std::optional<KernelEvent> classify_parsed(const LogLine& parsed, std::string_view raw,
                                           std::optional<std::int64_t> boot_time_ns = {});

// "0000:3b:00" (the Xid form, no function) or any form normalize_pci_bus_id accepts ->
// "0000:3b:00.0"; empty when `id` is not a bus id.
std::string normalize_kernel_bus_id(std::string_view id);

}  // namespace cardiac::kmsg
