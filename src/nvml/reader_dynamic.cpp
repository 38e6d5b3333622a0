// SPDX-License-Identifier: Apache-2.0
// NVML reads of the values that change: utilization, memory, thermal, power, clocks, ECC,
// PCIe, processes and NVLink.
#include <cstring>
#include <vector>

#include "nvml/pci.h"
#include "nvml/reader.h"
#include "nvml/return_codes.h"

namespace cardiac::nvml {
namespace {
constexpr unsigned long long kValueNotAvailable = ~0ull;
bool device_stopped(const GpuReading& g) {
  return g.health == DeviceHealth::kLost || g.health == DeviceHealth::kResetRequired;
}
}  // namespace

#define CARDIAC_NVML_CALL(field, name, ...) \
  (api.field ? call(current_, name, [&] { return api.field(__VA_ARGS__); }) : kFunctionNotFound)

// Reads one unsigned value into `target` when the call succeeds; returns false when the
// device must not be asked further (lost / reset required).
#define CARDIAC_READ(target, field, name, ...)        \
  do {                                                \
    rc = CARDIAC_NVML_CALL(field, name, __VA_ARGS__); \
    if (!note(g, name, rc)) return;                   \
    if (rc == kSuccess) target = value;               \
  } while (0)

void Reader::read_dynamic(nvmlDevice_t h, GpuReading& g) {
  const Api& api = lib_.api();
  nvmlReturn_t rc = kSuccess;
  unsigned value = 0;

  nvmlUtilization_t util{};
  rc = CARDIAC_NVML_CALL(utilization, "nvmlDeviceGetUtilizationRates", h, &util);
  if (!note(g, "nvmlDeviceGetUtilizationRates", rc)) return;
  if (rc == kSuccess) {
    g.utilization_gpu = util.gpu;
    g.utilization_memory = util.memory;
  }

  nvmlMemory_v2_t mem2{};
  mem2.version = kNvmlMemoryV2Version;
  rc = CARDIAC_NVML_CALL(memory_v2, "nvmlDeviceGetMemoryInfo_v2", h, &mem2);
  if (!note(g, "nvmlDeviceGetMemoryInfo_v2", rc)) return;
  if (rc == kSuccess) {
    g.memory_total = mem2.total;
    g.memory_used = mem2.used;
    g.memory_free = mem2.free;
    g.memory_reserved = mem2.reserved;
  } else {
    // Older drivers: v1 counts reserved memory as used.
    nvmlMemory_t mem{};
    rc = CARDIAC_NVML_CALL(memory, "nvmlDeviceGetMemoryInfo", h, &mem);
    if (!note(g, "nvmlDeviceGetMemoryInfo", rc)) return;
    if (rc == kSuccess) {
      g.memory_total = mem.total;
      g.memory_used = mem.used;
      g.memory_free = mem.free;
    }
  }

  CARDIAC_READ(g.temperature, temperature, "nvmlDeviceGetTemperature", h, kTemperatureGpu, &value);
  CARDIAC_READ(g.fan_speed, fan_speed, "nvmlDeviceGetFanSpeed", h, &value);
  CARDIAC_READ(g.power_usage_mw, power_usage, "nvmlDeviceGetPowerUsage", h, &value);
  CARDIAC_READ(g.power_limit_mw, enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit", h,
               &value);
  unsigned long long energy = 0;
  rc = CARDIAC_NVML_CALL(total_energy, "nvmlDeviceGetTotalEnergyConsumption", h, &energy);
  if (!note(g, "nvmlDeviceGetTotalEnergyConsumption", rc)) return;
  if (rc == kSuccess) g.energy_mj = energy;

  CARDIAC_READ(g.clock_sm_mhz, clock_info, "nvmlDeviceGetClockInfo", h, kClockSm, &value);
  CARDIAC_READ(g.clock_mem_mhz, clock_info, "nvmlDeviceGetClockInfo", h, kClockMem, &value);
  CARDIAC_READ(g.clock_graphics_mhz, clock_info, "nvmlDeviceGetClockInfo", h, kClockGraphics,
               &value);
  CARDIAC_READ(g.app_clock_graphics_mhz, applications_clock, "nvmlDeviceGetApplicationsClock", h,
               kClockGraphics, &value);
  CARDIAC_READ(g.app_clock_memory_mhz, applications_clock, "nvmlDeviceGetApplicationsClock", h,
               kClockMem, &value);
  unsigned long long reasons = 0;
  rc = CARDIAC_NVML_CALL(clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons", h,
                         &reasons);
  if (!note(g, "nvmlDeviceGetCurrentClocksEventReasons", rc)) return;
  if (rc == kSuccess) g.clock_event_reasons = reasons;
  CARDIAC_READ(g.pstate, performance_state, "nvmlDeviceGetPerformanceState", h, &value);
  if (g.pstate && *g.pstate > 15) g.pstate.reset();  // NVML_PSTATE_UNKNOWN (32)

  unsigned pending = 0;
  rc = CARDIAC_NVML_CALL(persistence_mode, "nvmlDeviceGetPersistenceMode", h, &value);
  if (!note(g, "nvmlDeviceGetPersistenceMode", rc)) return;
  if (rc == kSuccess) g.persistence_mode = value == kEnabled;
  rc = CARDIAC_NVML_CALL(mig_mode, "nvmlDeviceGetMigMode", h, &value, &pending);
  if (!note(g, "nvmlDeviceGetMigMode", rc)) return;
  if (rc == kSuccess) g.mig_mode = value == kEnabled;

  read_memory_errors(h, g);
  if (device_stopped(g)) return;
  read_pcie(h, g);
  if (device_stopped(g)) return;
  read_processes(h, g);
  if (device_stopped(g)) return;
  read_nvlinks(h, g);
}

void Reader::read_memory_errors(nvmlDevice_t h, GpuReading& g) {
  const Api& api = lib_.api();
  nvmlReturn_t rc = kSuccess;
  unsigned current = 0;
  unsigned pending = 0;
  rc = CARDIAC_NVML_CALL(ecc_mode, "nvmlDeviceGetEccMode", h, &current, &pending);
  if (!note(g, "nvmlDeviceGetEccMode", rc)) return;
  if (rc == kSuccess) {
    g.ecc_enabled = current == kEnabled;
    g.ecc_pending_enabled = pending == kEnabled;
  }
  struct Counter {
    unsigned type;
    unsigned counter;
    std::optional<std::uint64_t> GpuReading::*field;
  };
  for (auto [type, counter, field] :
       {Counter{kEccCorrected, kEccVolatile, &GpuReading::ecc_volatile_corrected},
        Counter{kEccUncorrected, kEccVolatile, &GpuReading::ecc_volatile_uncorrected},
        Counter{kEccCorrected, kEccAggregate, &GpuReading::ecc_aggregate_corrected},
        Counter{kEccUncorrected, kEccAggregate, &GpuReading::ecc_aggregate_uncorrected}}) {
    unsigned long long count = 0;
    rc = CARDIAC_NVML_CALL(total_ecc_errors, "nvmlDeviceGetTotalEccErrors", h, type, counter,
                           &count);
    if (!note(g, "nvmlDeviceGetTotalEccErrors", rc)) return;
    if (rc == kSuccess) g.*field = count;
  }
  for (auto [cause, field] : {std::pair{kRetiredMultipleSbe, &GpuReading::retired_pages_sbe},
                              std::pair{kRetiredDbe, &GpuReading::retired_pages_dbe}}) {
    // Asking with a zero count returns the number of pages without their addresses.
    unsigned count = 0;
    rc = CARDIAC_NVML_CALL(retired_pages, "nvmlDeviceGetRetiredPages", h, cause, &count, nullptr);
    if (rc == kInsufficientSize) rc = kSuccess;  // the count is filled in either way
    if (!note(g, "nvmlDeviceGetRetiredPages", rc)) return;
    if (rc == kSuccess || rc == kInsufficientSize) g.*field = count;
  }
  unsigned flag = 0;
  rc = CARDIAC_NVML_CALL(retired_pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus", h, &flag);
  if (!note(g, "nvmlDeviceGetRetiredPagesPendingStatus", rc)) return;
  if (rc == kSuccess) g.retired_pages_pending = flag == kEnabled;
  unsigned corr = 0, unc = 0, is_pending = 0, failure = 0;
  rc = CARDIAC_NVML_CALL(remapped_rows, "nvmlDeviceGetRemappedRows", h, &corr, &unc, &is_pending,
                         &failure);
  if (!note(g, "nvmlDeviceGetRemappedRows", rc)) return;
  if (rc == kSuccess) {
    g.remapped_rows_corrected = corr;
    g.remapped_rows_uncorrected = unc;
    g.remapped_rows_pending = is_pending != 0;
    g.remapped_rows_failure = failure != 0;
  }
  nvmlFieldValue_t field{};
  field.fieldId = kFieldRecoveryAction;
  rc = CARDIAC_NVML_CALL(field_values, "nvmlDeviceGetFieldValues", h, 1, &field);
  if (!note(g, "nvmlDeviceGetFieldValues", rc)) return;
  if (rc == kSuccess && field.nvmlReturn == kSuccess) g.recovery_action = field.value.uiVal;
}

void Reader::read_pcie(nvmlDevice_t h, GpuReading& g) {
  const Api& api = lib_.api();
  nvmlReturn_t rc = kSuccess;
  unsigned value = 0;
#define CARDIAC_READ_OR_STOP(target, field, name, ...) \
  do {                                                 \
    rc = CARDIAC_NVML_CALL(field, name, __VA_ARGS__);  \
    if (!note(g, name, rc)) return;                    \
    if (rc == kSuccess) target = value;                \
  } while (0)
  CARDIAC_READ_OR_STOP(g.pcie_gen_current, pcie_gen_current, "nvmlDeviceGetCurrPcieLinkGeneration",
                       h, &value);
  CARDIAC_READ_OR_STOP(g.pcie_width_current, pcie_width_current, "nvmlDeviceGetCurrPcieLinkWidth",
                       h, &value);
  CARDIAC_READ_OR_STOP(g.pcie_replay_counter, pcie_replay_counter, "nvmlDeviceGetPcieReplayCounter",
                       h, &value);
  CARDIAC_READ_OR_STOP(g.pcie_tx_kb_per_s, pcie_throughput, "nvmlDeviceGetPcieThroughput", h,
                       kPcieTxBytes, &value);
  CARDIAC_READ_OR_STOP(g.pcie_rx_kb_per_s, pcie_throughput, "nvmlDeviceGetPcieThroughput", h,
                       kPcieRxBytes, &value);
}

void Reader::read_processes(nvmlDevice_t h, GpuReading& g) {
  const Api& api = lib_.api();
  auto fetch = [&](auto field_fn, std::string_view name, const char* type) -> bool {
    if (!field_fn) return true;
    std::vector<nvmlProcessInfo_t> infos(8);
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned count = static_cast<unsigned>(infos.size());
      nvmlReturn_t rc = call(current_, name, [&] { return field_fn(h, &count, infos.data()); });
      if (rc == kInsufficientSize) {
        infos.resize(count + 8);  // processes may start between the two calls
        continue;
      }
      if (!note(g, name, rc)) return false;
      if (rc != kSuccess) return true;
      g.processes_supported = true;
      for (unsigned i = 0; i < count && i < infos.size(); ++i) {
        GpuProcess p;
        p.pid = infos[i].pid;
        if (infos[i].usedGpuMemory != kValueNotAvailable)
          p.used_memory_bytes = infos[i].usedGpuMemory;
        p.type = type;
        g.processes.push_back(std::move(p));
      }
      return true;
    }
    return true;
  };
  if (api.compute_processes) {
    if (!fetch(api.compute_processes, "nvmlDeviceGetComputeRunningProcesses", "compute")) {
      return;
    }
  } else if (api.compute_processes_v1) {
    std::vector<nvmlProcessInfo_v1_t> infos(64);
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc = call(current_, "nvmlDeviceGetComputeRunningProcesses",
                           [&] { return api.compute_processes_v1(h, &count, infos.data()); });
    if (!note(g, "nvmlDeviceGetComputeRunningProcesses", rc)) return;
    if (rc == kSuccess) {
      g.processes_supported = true;
      for (unsigned i = 0; i < count && i < infos.size(); ++i) {
        GpuProcess p{infos[i].pid, std::nullopt, "", "compute"};
        if (infos[i].usedGpuMemory != kValueNotAvailable)
          p.used_memory_bytes = infos[i].usedGpuMemory;
        g.processes.push_back(std::move(p));
      }
    }
  }
  if (!fetch(api.graphics_processes, "nvmlDeviceGetGraphicsRunningProcesses", "graphics")) {
    return;
  }
}

void Reader::read_nvlinks(nvmlDevice_t h, GpuReading& g) {
  const Api& api = lib_.api();
  if (!api.nvlink_state) return;
  for (unsigned link = 0; link < kNvLinkMaxLinks; ++link) {
    unsigned active = 0;
    nvmlReturn_t rc = CARDIAC_NVML_CALL(nvlink_state, "nvmlDeviceGetNvLinkState", h, link, &active);
    // PCIe parts answer NOT_SUPPORTED; links past the last one INVALID_ARGUMENT.
    if (rc == kNotSupported || rc == kInvalidArgument || rc == kFunctionNotFound) return;
    if (!note(g, "nvmlDeviceGetNvLinkState", rc)) return;
    if (rc != kSuccess) return;
    NvLink l;
    l.link = link;
    l.active = active == kEnabled;
    unsigned version = 0;
    rc = CARDIAC_NVML_CALL(nvlink_version, "nvmlDeviceGetNvLinkVersion", h, link, &version);
    if (!note(g, "nvmlDeviceGetNvLinkVersion", rc)) return;
    if (rc == kSuccess) l.version = version;
    struct Counter {
      unsigned id;
      std::optional<std::uint64_t> NvLink::*field;
    };
    for (auto [id, field] : {Counter{kNvLinkReplay, &NvLink::replay_errors},
                             Counter{kNvLinkRecovery, &NvLink::recovery_errors},
                             Counter{kNvLinkCrcFlit, &NvLink::crc_flit_errors},
                             Counter{kNvLinkCrcData, &NvLink::crc_data_errors}}) {
      unsigned long long count = 0;
      rc = CARDIAC_NVML_CALL(nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter", h, link, id,
                             &count);
      if (!note(g, "nvmlDeviceGetNvLinkErrorCounter", rc)) return;
      if (rc == kSuccess) l.*field = count;
    }
    const auto remote_key = std::pair{g.index, link};
    if (auto known = nvlink_remote_.find(remote_key); known != nvlink_remote_.end()) {
      l.remote_pci_bus_id = known->second;
    } else if (l.active) {
      nvmlPciInfo_t remote{};
      rc = CARDIAC_NVML_CALL(nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo", h, link,
                             &remote);
      if (!note(g, "nvmlDeviceGetNvLinkRemotePciInfo", rc)) return;
      if (rc == kSuccess) {
        l.remote_pci_bus_id = normalize_pci_bus_id(
            std::string(remote.busId, strnlen(remote.busId, sizeof(remote.busId))));
        nvlink_remote_.emplace(remote_key, l.remote_pci_bus_id);
      }
    }
    g.nvlinks.push_back(l);
  }
}

}  // namespace cardiac::nvml
