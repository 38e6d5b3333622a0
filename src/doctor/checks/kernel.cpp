// SPDX-License-Identifier: Apache-2.0
// The kernel-log check: one analysis of the log against the machine's GPUs, then each fault
// family's findings in turn — Xids (kernel_xid.cpp), the driver's other GPU messages
// (kernel_driver_messages.cpp), PCIe AER (kernel_aer.cpp), hung tasks (kernel_hung_task.cpp),
// NVSwitch, Fabric Manager, NVLink and InfiniBand (kernel_fabric.cpp).
//
// Finding ids. They are stable keys: add_cross_check_plans (cross_check.cpp) attaches the
// swap plan to xid.79, xid.48, xid.95, xid.119, xid.74, xid.140, xid.62, xid.64 and
// kernel.fallen_off_bus by id, and to any finding that is critical + hardware — which is how
// an escalated Xid (94, 13, 109, … back after a reboot) and xid.120/.143 get one too.
//   xid.<N>                one per (GPU, Xid N) root cause. Category, severity and actions come
//                          from xid_catalog; escalated to critical/hardware when the same Xid
//                          comes back after a reboot (app Xids 13/31/43: hardware/warning when
//                          they survive a reboot or hit 3+ programs). Follow-ons (45, 154) fold
//                          into the Xid before them on that GPU; Xid 79 also tells the fatal
//                          AER (Surprise Down) that preceded it, and the probe's own line.
//   kernel.fallen_off_bus  hardware/critical: the probe's "fallen off the bus" with no Xid 79
//   kernel.gsp_timeout     driver/critical: GSP RPC timeouts with no Xid 119/120 on that GPU
//   kernel.init_failure    driver/critical (hardware when the GPU also fell off the bus)
//   kernel.reset_required  driver/critical: the driver says the GPU needs a reset
//   kernel.aer             hardware: PCIe AER; critical (uncorrected fatal), warning
//                          (non-fatal, or a steady corrected rate), info (a few corrected)
//   kernel.hung_task       driver/critical: tasks blocked inside the nvidia module
//   kernel.hung_task.other resources/warning: other blocked tasks (I/O, NFS, memory)
//   kernel.sxid            hardware: NVSwitch SXid; critical when fatal, else warning
//   kernel.fabric_manager  Fabric Manager errors: hardware/critical when an NVSwitch fatal
//                          error is named, else driver/warning
//   kernel.nvlink          hardware: non-Xid NVLink errors; critical when fatal, else warning
//   kernel.ib              network: mlx5 NIC errors (critical: fatal/health) and link downs
#include <map>
#include <utility>

#include "doctor/checks/checks.h"
#include "doctor/checks/kernel_analysis.h"

namespace cardiac::doctor {

using namespace kernel_detail;  // NOLINT(google-build-using-namespace): private helpers

void check_kernel_log(const DoctorInput& in, std::vector<Finding>& out) {
  if (in.events.empty()) return;
  const Analysis a(in);
  std::vector<AerIncident> aer = aer_incidents(a);
  GroupMap groups = group_xids(a);
  const std::vector<std::size_t> rest = fold_related(a, groups);

  for (auto& [key, g] : groups) {
    if (g.xid == 79) attach_aer(a, aer, g);
    out.push_back(xid_finding(a, g));
  }

  // Non-Xid driver messages no Xid finding told, grouped per GPU.
  std::map<std::pair<kmsg::EventKind, std::string>, std::vector<std::size_t>> by_kind_bus;
  for (auto i : rest) by_kind_bus[{a.ev(i).kind, a.ev(i).pci_bus_id}].push_back(i);
  for (std::size_t i = 0; i < in.events.size(); ++i) {
    if (a.ev(i).kind == kmsg::EventKind::kInitFailure)
      by_kind_bus[{kmsg::EventKind::kInitFailure, a.ev(i).pci_bus_id}].push_back(i);
  }
  for (const auto& [key, events] : by_kind_bus) {
    const auto& [kind, bus] = key;
    if (kind == kmsg::EventKind::kFallenOffBus) {
      out.push_back(fallen_finding(a, bus, events, aer));
      continue;
    }
    const bool fell =
        !bus.empty() && (groups.count({bus, 79}) > 0 ||
                         by_kind_bus.count({kmsg::EventKind::kFallenOffBus, bus}) > 0);
    out.push_back(driver_message_finding(a, kind, bus, events, fell));
  }
  aer_findings(a, aer, out);
  hung_task_findings(a, out);
  sxid_findings(a, out);
  fabric_findings(a, out);
}

}  // namespace cardiac::doctor
