// SPDX-License-Identifier: Apache-2.0
// Built-in alert rules; thresholds from the DCGM and gpud notes in reference/health-checks.md.
#include "rules/defaults.h"

#include "rules/parse.h"

namespace cardiac::rules {

std::string_view default_rules_text() {
  return R"toml(# cardiac default alert rules. "DCGM" = DCGM health watches (modules/health), "gpud" =
# gpud components; "ours" = no anchor sets a number, ours is a starting point to tune.

# --- GPU thermal ----------------------------------------------------------------------------

[[rule]]
# gpud temperature component: Degraded when the margin to the slowdown threshold (DCGM field
# 158) falls below a configured margin; ours: 5 °C.
name = "gpu_temperature_near_slowdown"
metric = "gpu_temperature"
op = ">="
threshold_metric = "gpu_temperature_slowdown"
threshold_offset = -5
for = "1m"
severity = "warning"
description = "GPU {gpu} at {value} °C, within 5 °C of its slowdown threshold (alert at {threshold} °C)"

[[rule]]
# At the slowdown threshold the GPU slows its clocks by itself (NVML slowdown threshold): slow,
# not broken, so a warning, as in `cardiac status` and the doctor (docs/severity.md).
name = "gpu_temperature_above_slowdown"
metric = "gpu_temperature"
op = ">="
threshold_metric = "gpu_temperature_slowdown"
severity = "warning"
description = "GPU {gpu} at {value} °C, at or above its slowdown threshold {threshold} °C"

[[rule]]
# Within 2 °C of the shutdown threshold the board is about to power off (health/verdict.h).
name = "gpu_temperature_near_shutdown"
metric = "gpu_temperature"
op = ">="
threshold_metric = "gpu_temperature_shutdown"
threshold_offset = -2
severity = "critical"
description = "GPU {gpu} at {value} °C, about to shut down (shutdown threshold {threshold} + 2 °C)"

# --- GPU throttling: gpud hw-slowdown (HW slowdown / thermal / power brake; Unhealthy above
# 0.6 events/min over 10 min) and DCGM THERMAL/POWER (any violation time in the last minute).
# We sample the reason bits, so "active for 1m" stands in for both.

[[rule]]
name = "gpu_hw_slowdown"
metric = "gpu_clock_event_hw_slowdown"
op = "=="
threshold = 1
for = "1m"
severity = "warning"
description = "GPU {gpu}: HW slowdown active for over a minute (power supply or cooling; inspect the hardware)"

[[rule]]
name = "gpu_hw_thermal_slowdown"
metric = "gpu_clock_event_hw_thermal"
op = "=="
threshold = 1
for = "1m"
severity = "warning"
description = "GPU {gpu}: HW thermal slowdown active for over a minute (check airflow and fans)"

[[rule]]
name = "gpu_hw_power_brake"
metric = "gpu_clock_event_hw_power_brake"
op = "=="
threshold = 1
for = "1m"
severity = "warning"
description = "GPU {gpu}: HW power brake active for over a minute (check PSUs and power cables)"

# --- GPU memory and utilization -------------------------------------------------------------

[[rule]]
# Ours: 95 % used for 5 min leaves no room for a growing batch; clears at 90 %.
name = "gpu_memory_nearly_full"
metric = "gpu_memory_used_pct"
op = ">="
threshold = 95
clear = 90
for = "5m"
severity = "warning"
description = "GPU {gpu} memory {value} % used for 5 minutes"

[[rule]]
# Ours: processes hold the GPU but it does almost nothing ("allocated but idle").
name = "gpu_allocated_but_idle"
metric = "gpu_utilization_gpu"
op = "<"
threshold = 10
when_metric = "gpu_process_count"
when_op = ">="
when_threshold = 1
for = "30m"
severity = "info"
description = "GPU {gpu} held by processes but only {value} % utilized for 30 minutes"

# --- The serving view: GPU processes' memory and inference engines (docs/serving.md) --------

[[rule]]
# Ours: a process whose GPU memory grows steadily (a robust line through [serving] vram_window,
# R² >= 0.8, at least vram_min_growth_mib over vram_min_span) fills its GPU within the hour.
name = "gpu_process_vram_oom_soon"
metric = "gpu_process_vram_oom_minutes"
op = "<"
threshold = 60
clear = 90
severity = "warning"
description = "GPU {gpu}: process {pid} ({process}) grows steadily; out of GPU memory in about {value} minutes"

[[rule]]
# Ours: ten minutes is about what a person needs to checkpoint or drain before the OOM.
name = "gpu_process_vram_oom_imminent"
metric = "gpu_process_vram_oom_minutes"
op = "<"
threshold = 10
clear = 15
severity = "critical"
description = "GPU {gpu}: process {pid} ({process}) will run out of GPU memory in about {value} minutes"

[[rule]]
# An engine named in [serving] engines that cannot be read is unknown, not idle.
name = "serving_engine_unreadable"
metric = "serving_engine_up"
op = "=="
threshold = 0
for = "1m"
severity = "warning"
description = "inference engine {engine}: its /metrics cannot be read (the agent's log says why)"

[[rule]]
# Ours, as the doctor's serving.kv_cache_full: the KV cache >= 95 % with requests waiting or
# preemptions rising is memory-bound (fp8 KV cache, more GPUs, lower max_model_len; cardiac plan).
name = "serving_kv_cache_full"
metric = "serving_kv_cache_full"
op = "=="
threshold = 1
for = "2m"
severity = "warning"
description = "inference engine {engine}: KV cache full with requests waiting or preempted; memory-bound (fp8 KV cache, more GPUs, lower max_model_len; see cardiac plan)"

[[rule]]
# Ours, as the doctor's serving.batching: requests wait while the engine's GPUs are < 50 % busy.
name = "serving_queue_while_gpu_idle"
metric = "serving_queue_while_gpu_idle"
op = "=="
threshold = 1
for = "5m"
severity = "warning"
description = "inference engine {engine}: requests wait while its GPUs idle; batching or scheduling, not hardware (raise max_num_seqs, check the scheduler)"

# --- Signs of compromise: the agent's security watch ([security] watch_interval; the doctor's
# security.* findings, docs/security.md). The value is the finding's severity: 1 info, 2 warning,
# 3 critical. Ours: each sign pages as the doctor grades it; the finding already waited for
# "busy for long" (most of the interval's GPU samples), so no `for`.

[[rule]]
name = "security_gpu_cryptojacking"
metric = "security_gpu_cryptojacking"
op = ">="
threshold = 3
severity = "critical"
description = "{summary}: isolate the host and keep the evidence before stopping it ({runbook})"

[[rule]]
name = "security_uid0_account"
metric = "security_uid0_account"
op = ">="
threshold = 3
severity = "critical"
description = "{summary}: a second root account is a backdoor unless you made it ({runbook})"

[[rule]]
name = "security_uplink_flood"
metric = "security_uplink_flood"
op = "=="
threshold = 2
severity = "warning"
description = "{summary}: expected traffic, or a compromised host? ({runbook})"

[[rule]]
name = "security_uplink_flood_saturating"
metric = "security_uplink_flood"
op = ">="
threshold = 3
severity = "critical"
description = "{summary}, holding most of a saturated uplink: isolate the host ({runbook})"

[[rule]]
name = "security_unknown_gpu_process"
metric = "security_unknown_gpu_process"
op = ">="
threshold = 2
severity = "warning"
description = "{summary}: not a queue or Slurm job, nor in [security] allowed_gpu_commands ({runbook})"

[[rule]]
name = "security_deleted_executable"
metric = "security_deleted_executable"
op = ">="
threshold = 2
severity = "warning"
description = "{summary}: malware deletes itself after it starts ({runbook})"

[[rule]]
name = "security_tmp_executable"
metric = "security_tmp_executable"
op = ">="
threshold = 2
severity = "warning"
description = "{summary}: programs are not installed there ({runbook})"

[[rule]]
name = "security_new_listening_port"
metric = "security_new_listening_port"
op = ">="
threshold = 2
severity = "warning"
description = "{summary}: a service you did not start, or a backdoor? ({runbook})"

# --- ECC and memory repair: DCGM MEM watch (thresholds in DcgmGPUHardwareLimits.h) ----------

[[rule]]
# DCGM: any volatile double-bit error -> FAIL (DCGM_FR_VOLATILE_DBE_DETECTED, ISOLATE).
name = "gpu_ecc_uncorrected"
metric = "gpu_ecc_volatile_uncorrected"
op = ">"
threshold = 0
severity = "critical"
description = "GPU {gpu}: {value} uncorrected (double-bit) ECC errors since driver load"

[[rule]]
# Ours: no anchor alerts on the corrected-error rate; 100/h flags a cell going bad well before
# DCGM's retirement limits.
name = "gpu_ecc_corrected_rising"
kind = "rate"
metric = "gpu_ecc_volatile_corrected"
op = ">"
threshold = 100
per = "1h"
window = "1h"
severity = "warning"
description = "GPU {gpu}: corrected ECC errors rising at {value} per hour"

[[rule]]
# DCGM: pending row remap -> reset needed; gpud remapped-rows: pending -> REBOOT_SYSTEM.
name = "gpu_row_remap_pending"
metric = "gpu_remapped_rows_pending"
op = "=="
threshold = 1
severity = "warning"
description = "GPU {gpu}: a row remap is pending; reset the GPU or reboot to apply it"

[[rule]]
# DCGM: row-remap failure -> FAIL (ROW_REMAP_FAILURE); gpud: HARDWARE_INSPECTION.
name = "gpu_row_remap_failed"
metric = "gpu_remapped_rows_failure"
op = "=="
threshold = 1
severity = "critical"
description = "GPU {gpu}: row remapping failed; the GPU needs hardware inspection"

[[rule]]
# DCGM: pending page retirement -> WARN.
name = "gpu_page_retirement_pending"
metric = "gpu_retired_pages_pending"
op = "=="
threshold = 1
severity = "warning"
description = "GPU {gpu}: a page retirement is pending; reset the GPU to apply it"

[[rule]]
# DCGM: SBE + DBE retired pages >= 63 (MAX_RETIRED_PAGES) -> FAIL; warn at 60 to plan a swap.
name = "gpu_retired_pages_near_limit"
metric = "gpu_retired_pages_total"
op = ">="
threshold = 60
severity = "warning"
description = "GPU {gpu}: {value} pages retired, the limit is 63"

# --- PCIe: DCGM PCIE watch -------------------------------------------------------------------

[[rule]]
# DCGM watches link width and generation; links may train down when idle, so only under load
# (utilization >= 20 %, ours) and for 5 min.
name = "gpu_pcie_width_degraded"
metric = "gpu_pcie_width_current"
op = "<"
threshold_metric = "gpu_pcie_width_max"
when_metric = "gpu_utilization_gpu"
when_op = ">="
when_threshold = 20
for = "5m"
severity = "warning"
description = "GPU {gpu}: PCIe link x{value} under load, below its maximum x{threshold} (reseat the card)"

[[rule]]
name = "gpu_pcie_gen_degraded"
metric = "gpu_pcie_gen_current"
op = "<"
threshold_metric = "gpu_pcie_gen_max"
when_metric = "gpu_utilization_gpu"
when_op = ">="
when_threshold = 20
for = "5m"
severity = "warning"
description = "GPU {gpu}: PCIe Gen{value} under load, below its maximum Gen{threshold}"

[[rule]]
# DCGM: replays in the last 60 s > ceil(per-lane rate x lanes); per lane per minute Gen3 0.48,
# Gen4 0.96, Gen5 1.92 (DCGM_FR_PCI_REPLAY_RATE, WARN).
name = "gpu_pcie_replay_rate"
kind = "rate"
metric = "gpu_pcie_replay_counter"
op = ">"
threshold_metric = "gpu_pcie_replay_limit_per_min"
per = "1m"
window = "1m"
severity = "warning"
description = "GPU {gpu}: {value} PCIe replays per minute, above the expected {threshold}"

# --- GPU presence ----------------------------------------------------------------------------

[[rule]]
# DCGM UpdateLostGpus / Xid 79; gpud: GPU_IS_LOST on any NVML call.
name = "gpu_lost"
metric = "gpu_up"
op = "=="
threshold = 0
severity = "critical"
description = "GPU {gpu} ({uuid}) stopped answering NVML (lost, hung or erroring)"

[[rule]]
# Ours: from the first sample, because no other GPU rule can fire while NVML is unusable
# (library missing, driver not loaded, library/driver version mismatch).
name = "nvml_unavailable"
metric = "nvml_available"
op = "=="
threshold = 0
severity = "critical"
description = "NVML is unusable, so no GPU is monitored; the reason is on /healthz and in the agent's log"

[[rule]]
# Ours: the kernel-log fault counts (and their alerts) need the log; a missing or unreadable
# [kmsg] source would otherwise silence every rule below.
name = "kmsg_unreadable"
metric = "kmsg_up"
op = "=="
threshold = 0
for = "1m"
severity = "warning"
description = "The configured kernel log cannot be read, so no kernel-log GPU fault is counted; the reason is in /api/v1/status (kernel_log) and the agent's log"

# --- Kernel-log faults (health/faults.cpp: one rule per fault class) -------------------------
# Counted from the followed kernel log and NVML's Xid events. One alert per (GPU, class) while
# the class keeps occurring; its value counts every occurrence. Ours: it resolves after an hour
# without another occurrence (a GPU that stays broken stays fenced and in `cardiac status`).

[[rule]]
name = "gpu_xid_critical"
kind = "increase"
metric = "gpu_fault_xid_critical_total"
op = ">"
threshold = 0
window = "1h"
severity = "critical"
description = "GPU {gpu} ({pci_bus_id}): critical Xid in the kernel log, {value} times; run cardiac doctor for the Xid and what to do"

[[rule]]
name = "gpu_fallen_off_bus"
kind = "increase"
metric = "gpu_fault_fallen_off_bus_total"
op = ">"
threshold = 0
window = "1h"
severity = "critical"
description = "GPU {gpu} ({pci_bus_id}) has fallen off the bus (Xid 79), {value} kernel-log events; reboot the machine, then check power, seating and riser"

[[rule]]
name = "gpu_reset_required"
kind = "increase"
metric = "gpu_fault_reset_required_total"
op = ">"
threshold = 0
window = "1h"
severity = "critical"
description = "GPU {gpu} ({pci_bus_id}): the driver says it needs a reset, {value} times; stop its jobs and run nvidia-smi -r"

[[rule]]
name = "gpu_nvlink_fatal"
kind = "increase"
metric = "gpu_fault_nvlink_fatal_total"
op = ">"
threshold = 0
window = "1h"
severity = "critical"
description = "GPU {gpu} ({pci_bus_id}): fatal NVLink error, {value} times; check nvidia-smi nvlink --status"

[[rule]]
name = "nvswitch_sxid_fatal"
kind = "increase"
metric = "nvswitch_sxid_fatal_total"
op = ">"
threshold = 0
window = "1h"
severity = "critical"
description = "NVSwitch {pci_bus_id}: fatal SXid, {value} times; multi-GPU jobs fail until Fabric Manager recovers it"

# gpud gpu-counts compares NVML's count with --gpu-count. The count is per machine, so this one
# is an example to copy into your own rules:
# [[rule]]
# name = "gpu_count_below_expected"
# kind = "absence"
# expected_gpus = 8
# severity = "critical"
# description = "only {value} of 8 GPUs visible"

# --- Host ------------------------------------------------------------------------------------

[[rule]]
# Ours: CPU saturated for 5 min starves data loaders; clears at 90 %.
name = "host_cpu_saturated"
metric = "host_cpu_busy_pct"
op = ">"
threshold = 95
clear = 90
for = "5m"
severity = "warning"
description = "host CPU {value} % busy for 5 minutes"

[[rule]]
# Ours (gpud memory component reports usage without a fixed threshold): < 5 % available.
name = "host_memory_low"
metric = "host_memory_available_pct"
op = "<"
threshold = 5
clear = 10
for = "1m"
severity = "critical"
description = "host memory: only {value} % available"

[[rule]]
# Ours: swap-in/out counters are not collected yet; a swap more than 20 % used stands in.
name = "host_swapping"
metric = "host_swap_used_pct"
op = ">"
threshold = 20
for = "5m"
severity = "warning"
description = "host is swapping: {value} % of swap in use"

[[rule]]
# Ours: > 90 % full; clears at 85 %.
name = "host_disk_nearly_full"
metric = "host_disk_used_pct"
op = ">"
threshold = 90
clear = 85
for = "5m"
severity = "warning"
description = "{mount} is {value} % full"

[[rule]]
# Ours: a NIC above 90 % of its link speed for 1 min.
name = "host_nic_saturated"
metric = "host_nic_util_pct"
op = ">"
threshold = 90
for = "1m"
severity = "warning"
description = "{nic} at {value} % of its link speed"

[[rule]]
# Ours: any new NIC error over 5 min (gpud infiniband/network components watch errors too).
name = "host_nic_errors_rising"
kind = "rate"
metric = "host_nic_errors_total"
op = ">"
threshold = 0
per = "1m"
window = "5m"
severity = "warning"
description = "{nic}: {value} errors per minute"

[[rule]]
# Ours: drops above one per second over 5 min; a few drops are normal under bursts.
name = "host_nic_drops_rising"
kind = "rate"
metric = "host_nic_drops_total"
op = ">"
threshold = 60
per = "1m"
window = "5m"
severity = "warning"
description = "{nic}: {value} drops per minute"

[[rule]]
# gpud os component: D-state for 5 consecutive 1-minute checks is persistent.
name = "host_dstate_processes"
metric = "host_dstate_processes"
op = ">"
threshold = 0
for = "5m"
severity = "warning"
description = "processes stuck in D state for 5 minutes: {value}"

[[rule]]
# The issue's 16-25 °C room range (no anchor sets one). host_inlet_temperature_c has no source
# yet, so these never fire until a sensor reader provides it.
name = "host_inlet_temperature_high"
metric = "host_inlet_temperature_c"
op = ">"
threshold = 25
for = "5m"
severity = "warning"
description = "inlet temperature {value} °C, above 25 °C"

[[rule]]
name = "host_inlet_temperature_low"
metric = "host_inlet_temperature_c"
op = "<"
threshold = 16
for = "5m"
severity = "warning"
description = "inlet temperature {value} °C, below 16 °C"
)toml";
}

Result<std::vector<Rule>> default_rules() {
  return parse_rules(default_rules_text(), "<default rules>");
}

}  // namespace cardiac::rules
