// SPDX-License-Identifier: Apache-2.0
// What each Xid means and what to do about it: the doctor's table of NVIDIA's Xid codes
// (shared/reference/xid-and-kmsg.md section 7, ranges expanded), in the doctor's own terms.
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "doctor/finding.h"

namespace cardiac::doctor {

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

struct XidInfo {
  int code = 0;
  std::string_view meaning;  // "GPU has fallen off the bus"
  std::string_view cause;    // typical cause in plain words
  XidAction action = XidAction::kInvestigate;
  Severity severity = Severity::kWarning;
  Category category = Category::kDriver;
  // The card itself is suspect on the first occurrence (plan a cross-check: 48, 79, 95, …).
  bool suspect_card = false;
  // The card becomes suspect when the same Xid comes back after a reboot (94, 92, 13, …):
  // a reboot clears driver and application state, so what survives it points at the card.
  bool suspect_on_repeat = false;
  // An application triggers it (13, 31, 43): the process named on the line matters.
  bool app_error = false;
  // Follows another Xid on the same GPU and carries no cause of its own (45, 154).
  bool follow_on = false;
  // The next steps in order, in plain words. "{gpu}" stands for the GPU's label and "{id}" for
  // what nvidia-smi -i accepts (index or bus id); the check fills both in.
  std::array<std::string_view, 3> steps{};
  bool known = true;  // false for the generic entry of a code not in the table
};

// The entry for `code`; for a code not in the table a generic entry (warning, driver,
// investigate) whose text names the code's lookup in NVIDIA's catalog. Never fails.
XidInfo lookup_xid(int code);

// Every entry of the table, by code (for docs and tests).
std::span<const XidInfo> xid_catalog();

}  // namespace cardiac::doctor
