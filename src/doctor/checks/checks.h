// SPDX-License-Identifier: Apache-2.0
// The checks: each reads a DoctorInput and appends findings. Pure: no I/O except through
// input.fs, no clock reads (input.now is the time of the run).
#pragma once

#include <vector>

#include "doctor/finding.h"
#include "doctor/input.h"
#include "serving/engines.h"

namespace cardiac::doctor {

// Kernel log: Xids with the catalog, chains, escalation across boots, non-Xid driver messages,
// AER linked to the GPU behind the port, hung tasks in the nvidia module, SXid, Fabric
// Manager, mlx5/InfiniBand.
void check_kernel_log(const DoctorInput& in, std::vector<Finding>& out);
// The kernel log itself: input that did not look like a kernel log (binary, the wrong file),
// lines too long to be kernel messages, a log that was cut or whose compression was damaged.
void check_kernel_log_read(const DoctorInput& in, std::vector<Finding>& out);
// GPU hardware: ECC, thermal, power, PCIe, missing GPUs, NVLink.
void check_gpu_hardware(const DoctorInput& in, std::vector<Finding>& out);
// GPU peers: a GPU whose SM clock lags the other busy GPUs of its model on this node for most
// of the window while they are not throttled (gpu.fail_slow).
void check_gpu_peers(const DoctorInput& in, std::vector<Finding>& out);
// Driver and software: NVML missing, driver not loaded, version mismatch, persistence mode,
// slow or hung NVML, D-state processes, GPU memory held by processes that are gone.
void check_driver(const DoctorInput& in, std::vector<Finding>& out);
// Resources: "why is it slow" triage, VRAM pressure, host CPU/memory/disk.
void check_resources(const DoctorInput& in, std::vector<Finding>& out);
// The serving view: GPU processes whose memory grows steadily (time to out-of-memory), and the
// inference engines' metrics (KV cache full, requests queued while the GPUs idle, unreadable).
void check_serving(const DoctorInput& in, std::vector<Finding>& out);
// Each GPU process's memory over time: the agent's series continued by the doctor's samples.
std::vector<ProcessVram> process_vram_series(const DoctorInput& in);
// The inference engine (vLLM, SGLang, …) holding most of `g` at a flat level, when one does:
// its memory is the preallocated KV cache, not exhaustion.
struct PreallocatingEngine {
  std::uint32_t pid = 0;
  serving::EngineGuess engine;
};
std::optional<PreallocatingEngine> preallocating_engine(const DoctorInput& in,
                                                        const nvml::GpuReading& g);
// Signs of compromise (security.cpp): deleted or temporary-directory executables, GPUs kept
// busy outside any job (cryptojacking), new listening ports, non-root UID 0 accounts.
void check_security(const DoctorInput& in, std::vector<Finding>& out);
// Network: probes (near vs far), NIC saturation, errors and drops, DNS time.
void check_network(const DoctorInput& in, std::vector<Finding>& out);
// Traffic by process over the window: one process flooding the uplink to many remotes.
void check_traffic(const DoctorInput& in, std::vector<Finding>& out);

// One line on a probe for the report's "looked at" list: what was probed, how it went, and
// "ok" when no finding came of it.
std::string probe_summary(const ProbeResult& p);

// The agent's incident history (DoctorInput::incidents): history.repeat_offender, a card that
// faults again within kRepeatOffenderWindow of its return to service; history.node_suspect, at
// least kNodeSuspectIncidents incidents on kNodeSuspectCards or more cards of one node within
// kNodeSuspectWindow (critical from one card more).
void check_history(const DoctorInput& in, std::vector<Finding>& out);
inline constexpr DurationNs kRepeatOffenderWindow = 7 * 24 * 3600 * kNsPerSec;
inline constexpr DurationNs kNodeSuspectWindow = 30 * 24 * 3600 * kNsPerSec;
inline constexpr std::size_t kNodeSuspectIncidents = 3;
inline constexpr std::size_t kNodeSuspectCards = 2;

// The swap procedure for a suspect card (or "the suspect card" for an empty ref).
CrossCheckPlan cross_check_plan(const GpuRef& g);
// Adds the cross-check plan to every finding that suspects a card (fell off the bus,
// repeated Xid 79/48/94/95/119, …).
void add_cross_check_plans(std::vector<Finding>& findings);
// Names the jobs running on each finding's GPU in the latest sample (GpuProcess.job): in
// Finding::jobs, a sentence of the explanation and one piece of evidence per process.
void add_gpu_jobs(const DoctorInput& in, std::vector<Finding>& findings);

// Configuration drift (`--baseline`): every fact of this host that differs from the baseline,
// or that could not be read here, as a `drift.<family>` finding with its risk.
void check_drift(const DoctorInput& in, std::vector<Finding>& out);
// Runs every check and builds the report (GPU list, events, sorted findings).
Report diagnose(const DoctorInput& in);

}  // namespace cardiac::doctor
