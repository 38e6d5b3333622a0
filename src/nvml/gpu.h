// SPDX-License-Identifier: Apache-2.0
// What cardiac knows about one GPU at one moment. Every reading is optional: absent means the
// device or driver does not offer it (NOT_SUPPORTED), never zero.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"

namespace cardiac::nvml {

enum class DeviceHealth {
  kOk,             // answered normally
  kLost,           // GPU_IS_LOST: fallen off the bus or otherwise inaccessible
  kResetRequired,  // RESET_REQUIRED
  kError,          // UNKNOWN or another unexpected error on a basic call
  kUnresponsive,   // a call did not return within the deadline (hung driver)
  kNotSampled,     // not asked: the collector gave up before reaching it
};

std::string_view device_health_name(DeviceHealth h);

struct GpuProcess {
  std::uint32_t pid = 0;
  std::optional<std::uint64_t> used_memory_bytes;  // absent when NVML says NOT_AVAILABLE
  std::string name;                                // from /proc/<pid>/comm, "" if gone
  std::string type;                                // "compute" or "graphics"
  // The job the process belongs to, filled beside `name` by jobmap::attribute_jobs (never
  // from NVML): the job id ("123"), who runs it ("slurm" or "cardiac"), and where that was
  // read ("cgroup", "environ"). `job_note` says why no job is known when something could
  // not be read (e.g. "/proc/4242/environ: permission denied").
  std::string job{};
  std::string job_source{};
  std::string job_from{};
  std::string job_note{};
};

struct NvLink {
  unsigned link = 0;
  bool active = false;
  std::optional<unsigned> version;
  std::optional<std::uint64_t> replay_errors;
  std::optional<std::uint64_t> recovery_errors;
  std::optional<std::uint64_t> crc_flit_errors;
  std::optional<std::uint64_t> crc_data_errors;
  // The PCI function at the link's far end ("0000:3b:00.0"): another GPU, or an NVSwitch.
  // Empty when NVML does not say (inactive link, older driver).
  std::string remote_pci_bus_id{};
};

struct GpuReading {
  unsigned index = 0;
  DeviceHealth health = DeviceHealth::kOk;
  std::string health_detail;            // e.g. "nvmlDeviceGetUUID returned GPU_IS_LOST"
  TimeNs sampled_at = 0;                // wall clock when the device was read
  std::int64_t sample_duration_us = 0;  // time spent inside NVML for this device

  // Identity.
  std::string name;
  std::string uuid;
  std::string serial;
  std::string pci_bus_id;                      // normalised "0000:3b:00.0"
  std::optional<std::uint32_t> pci_device_id;  // device << 16 | vendor
  std::optional<std::uint32_t> pci_subsystem_id;
  std::optional<unsigned> minor_number;
  std::string vbios_version;
  std::optional<bool> persistence_mode;
  std::optional<bool> mig_mode;

  // Utilization (%).
  std::optional<unsigned> utilization_gpu;
  std::optional<unsigned> utilization_memory;

  // Frame-buffer memory (bytes).
  std::optional<std::uint64_t> memory_total;
  std::optional<std::uint64_t> memory_used;
  std::optional<std::uint64_t> memory_free;
  std::optional<std::uint64_t> memory_reserved;

  // Thermal (°C) and fan (%).
  std::optional<unsigned> temperature;
  std::optional<unsigned> temperature_slowdown;
  std::optional<unsigned> temperature_shutdown;
  std::optional<unsigned> temperature_memory_max;
  std::optional<unsigned> temperature_gpu_max;
  std::optional<unsigned> fan_speed;

  // Power (milliwatts) and energy (millijoules since driver load).
  std::optional<unsigned> power_usage_mw;
  std::optional<unsigned> power_limit_mw;  // enforced
  std::optional<unsigned> power_default_limit_mw;
  std::optional<std::uint64_t> energy_mj;

  // Clocks (MHz).
  std::optional<unsigned> clock_sm_mhz;
  std::optional<unsigned> clock_mem_mhz;
  std::optional<unsigned> clock_graphics_mhz;
  std::optional<unsigned> clock_sm_max_mhz;
  std::optional<unsigned> clock_mem_max_mhz;
  // Application clocks: what the GPU runs at under load unless it must slow down, set with
  // `nvidia-smi -ac` (back to the part's defaults after `-rac`, a reboot or a driver reload).
  // Absent on parts without them (GeForce boards among others), never 0.
  std::optional<unsigned> app_clock_graphics_mhz;
  std::optional<unsigned> app_clock_memory_mhz;
  std::optional<unsigned> default_app_clock_graphics_mhz;
  std::optional<unsigned> default_app_clock_memory_mhz;
  std::optional<std::uint64_t> clock_event_reasons;  // bit mask, see clock_events.h
  std::optional<unsigned> pstate;                    // 0..15

  // ECC.
  std::optional<bool> ecc_enabled;
  std::optional<bool> ecc_pending_enabled;
  std::optional<std::uint64_t> ecc_volatile_corrected;
  std::optional<std::uint64_t> ecc_volatile_uncorrected;
  std::optional<std::uint64_t> ecc_aggregate_corrected;
  std::optional<std::uint64_t> ecc_aggregate_uncorrected;
  std::optional<unsigned> retired_pages_sbe;
  std::optional<unsigned> retired_pages_dbe;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned> remapped_rows_corrected;
  std::optional<unsigned> remapped_rows_uncorrected;
  std::optional<bool> remapped_rows_pending;
  std::optional<bool> remapped_rows_failure;
  // NVML's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): 0 none, 1 GPU reset, 2 node
  // reboot, 3 drain peer-to-peer, 4 drain and reset. Absent before driver 550.
  std::optional<unsigned> recovery_action;

  // PCIe.
  std::optional<unsigned> pcie_gen_current;
  std::optional<unsigned> pcie_gen_max;
  std::optional<unsigned> pcie_width_current;
  std::optional<unsigned> pcie_width_max;
  std::optional<unsigned> pcie_replay_counter;
  std::optional<unsigned> pcie_tx_kb_per_s;
  std::optional<unsigned> pcie_rx_kb_per_s;

  std::vector<GpuProcess> processes;
  bool processes_supported = false;
  std::vector<NvLink> nvlinks;  // only links NVML reports; empty on PCIe-only parts

  // Calls that failed with something other than NOT_SUPPORTED: function → return code name.
  std::map<std::string, std::string> call_errors;
};

// Library-wide facts.
struct NvmlSystem {
  std::string library_path;
  std::string driver_version;
  std::string nvml_version;
  std::optional<int> cuda_driver_version;  // 12040 means CUDA 12.4
  unsigned device_count = 0;
};

// One complete GPU sample, or why it could not be taken.
struct GpuSnapshot {
  bool available = false;  // NVML loaded and initialised
  // When !available: "library_not_found", "library_unusable", "driver_not_loaded",
  // "version_mismatch", "no_permission", "init_failed", "unresponsive", "worker_failed".
  std::string error_kind;
  std::string error;  // human explanation with the next step
  NvmlSystem system;
  std::vector<GpuReading> gpus;
  TimeNs taken_at = 0;
  // Wall time the sample took, including a worker start when this sample needed one.
  std::int64_t duration_us = 0;
};

}  // namespace cardiac::nvml
