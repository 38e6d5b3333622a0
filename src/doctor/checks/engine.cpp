// SPDX-License-Identifier: Apache-2.0
#include "doctor/checks/checks.h"
#include "doctor/finding_ids.h"
#include "doctor/gpu_map.h"

namespace cardiac::doctor {

Report diagnose(const DoctorInput& in) {
  Report r;
  r.generated_at = in.now;
  if (const auto* h = in.last_host()) r.hostname = h->system.hostname.value_or("");
  r.gpus = GpuMap(in).all();
  r.events = in.events;
  for (const auto& p : in.probes) r.sources.probes.push_back(probe_summary(p));
  r.traffic = in.traffic;

  check_kernel_log_read(in, r.findings);
  check_kernel_log(in, r.findings);
  check_gpu_hardware(in, r.findings);
  check_gpu_peers(in, r.findings);
  check_driver(in, r.findings);
  check_resources(in, r.findings);
  check_serving(in, r.findings);
  check_network(in, r.findings);
  check_traffic(in, r.findings);
  check_security(in, r.findings);
  check_drift(in, r.findings);
  check_history(in, r.findings);
  add_cross_check_plans(r.findings);
  add_gpu_jobs(in, r.findings);
  attach_runbooks(r.findings, in.config.runbook_base);
  sort_findings(r.findings);
  return r;
}

}  // namespace cardiac::doctor
