// SPDX-License-Identifier: Apache-2.0
// Device entry points for memory errors, PCIe, running processes and NVLink.
#include <algorithm>
#include <string>
#include <vector>

#include "exports.h"
#include "state.h"

using cardiac::nvml::ReturnCode;
using fake::Json;

namespace {

constexpr unsigned long long kValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE

bool process_matches(const Json& process, bool graphics) {
  const std::string type = process.value("type", "compute");
  return type == "compute+graphics" || type == (graphics ? "graphics" : "compute");
}

// A process's memory at scenario time t: `used_memory_bytes`, plus
// `used_memory_growth_bytes_per_s` for every second since `growth_since` (default 0), so a
// leak is one key rather than a timeline entry per step. Not available stays not available.
unsigned long long used_memory(const Json& process, double t) {
  if (!process.contains("used_memory_bytes")) return kValueNotAvailable;
  const auto base = process["used_memory_bytes"].get<unsigned long long>();
  const double rate = process.value("used_memory_growth_bytes_per_s", 0.0);
  const double since = process.value("growth_since", 0.0);
  if (rate <= 0 || t <= since) return base;
  const double grown = rate * (t - since);
  if (grown >= static_cast<double>(kValueNotAvailable - 1 - base)) return kValueNotAvailable - 1;
  return base + static_cast<unsigned long long>(grown);
}

// NVML's count protocol: *count in = capacity, out = entries; too small → INSUFFICIENT_SIZE
// with the count needed (nothing running is SUCCESS with 0, whatever the capacity).
template <class Info>
nvmlReturn_t processes(fake::Call& call, bool graphics, unsigned int* count, Info* infos) {
  if (call.status() != ReturnCode::kSuccess) return call.status();
  if (!count) return ReturnCode::kInvalidArgument;
  const Json& d = call.device();
  if (!d.contains("processes")) return ReturnCode::kNotSupported;
  std::vector<const Json*> matching;
  for (const auto& p : d["processes"]) {
    if (process_matches(p, graphics)) matching.push_back(&p);
  }
  const auto needed = static_cast<unsigned int>(matching.size());
  if (*count < needed) {
    *count = needed;
    return ReturnCode::kInsufficientSize;
  }
  *count = needed;
  if (needed == 0) return ReturnCode::kSuccess;
  if (!infos) return ReturnCode::kInvalidArgument;
  for (unsigned int i = 0; i < needed; ++i) {
    Info info{};
    info.pid = matching[i]->at("pid").get<unsigned int>();
    info.usedGpuMemory = used_memory(*matching[i], call.now());
    if constexpr (requires { info.gpuInstanceId; }) {
      info.gpuInstanceId = 0xFFFFFFFF;  // not in a MIG instance
      info.computeInstanceId = 0xFFFFFFFF;
    }
    infos[i] = info;
  }
  return ReturnCode::kSuccess;
}

// The link's object, or the code for a link the scenario does not describe: no "nvlinks" key is
// a part without NVLink (NOT_SUPPORTED); past the highest listed link is out of range.
const Json* nvlink(fake::Call& call, unsigned int link, nvmlReturn_t* rc) {
  const Json& d = call.device();
  if (!d.contains("nvlinks")) {
    *rc = ReturnCode::kNotSupported;
    return nullptr;
  }
  unsigned int highest = 0;
  bool any = false;
  for (const auto& l : d["nvlinks"]) {
    const auto index = l.at("link").get<unsigned int>();
    if (index == link) return &l;
    highest = any ? std::max(highest, index) : index;
    any = true;
  }
  *rc = any && link < highest ? ReturnCode::kNotSupported : ReturnCode::kInvalidArgument;
  return nullptr;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  FAKE_DEVICE_CALL(device);
  if (!current || !pending) return ReturnCode::kInvalidArgument;
  nvmlReturn_t rc = call.get_bool("ecc_enabled", current);
  if (rc != ReturnCode::kSuccess) return rc;
  if (call.get_bool("ecc_pending_enabled", pending) != ReturnCode::kSuccess) *pending = *current;
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int error_type,
                                         unsigned int counter_type, unsigned long long* count) {
  FAKE_DEVICE_CALL(device);
  if (error_type > cardiac::nvml::kEccUncorrected || counter_type > cardiac::nvml::kEccAggregate) {
    return ReturnCode::kInvalidArgument;
  }
  const std::string key =
      std::string("ecc_") +
      (counter_type == cardiac::nvml::kEccVolatile ? "volatile_" : "aggregate_") +
      (error_type == cardiac::nvml::kEccCorrected ? "corrected" : "uncorrected");
  return call.get(key.c_str(), count);
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned int cause, unsigned int* count,
                                       unsigned long long* addresses) {
  FAKE_DEVICE_CALL(device);
  if (cause > cardiac::nvml::kRetiredDbe || !count) return ReturnCode::kInvalidArgument;
  unsigned int pages = 0;
  const char* key = cause == cardiac::nvml::kRetiredDbe ? "retired_pages_dbe" : "retired_pages_sbe";
  if (nvmlReturn_t rc = call.get(key, &pages); rc != ReturnCode::kSuccess) return rc;
  // A zero capacity or no buffer is NVML's way to ask for the count alone.
  if (*count == 0 || !addresses) {
    *count = pages;
    return ReturnCode::kSuccess;
  }
  if (*count < pages) {
    *count = pages;
    return ReturnCode::kInsufficientSize;
  }
  for (unsigned int i = 0; i < pages; ++i) {
    // Distinct, page-aligned addresses; the cause is encoded so SBE and DBE pages differ.
    addresses[i] = 0x100000000ull * (cause + 1) + 0x1000ull * (i + 1);
  }
  *count = pages;
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, unsigned int* pending) {
  FAKE_DEVICE_CALL(device);
  return call.get_bool("retired_pages_pending", pending);
}

// Only NVML_FI_DEV_GET_GPU_RECOVERY_ACTION is known; every other field answers NOT_SUPPORTED in
// its own entry, as a real driver does for fields it lacks.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  FAKE_DEVICE_CALL(device);
  if (count < 0 || (count > 0 && values == nullptr)) return ReturnCode::kInvalidArgument;
  const Json& d = call.device();
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.nvmlReturn = ReturnCode::kNotSupported;
    if (v.fieldId != cardiac::nvml::kFieldRecoveryAction || !d.contains("recovery_action"))
      continue;
    v.valueType = 0;  // NVML_VALUE_TYPE_UNSIGNED_INT
    v.nvmlReturn = call.get("recovery_action", &v.value.uiVal);
  }
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrected,
                                       unsigned int* uncorrected, unsigned int* pending,
                                       unsigned int* failure) {
  FAKE_DEVICE_CALL(device);
  if (!corrected || !uncorrected || !pending || !failure) return ReturnCode::kInvalidArgument;
  const Json& d = call.device();
  for (const char* key : {"remapped_rows_corrected", "remapped_rows_uncorrected",
                          "remapped_rows_pending", "remapped_rows_failure"}) {
    if (!d.contains(key)) return ReturnCode::kNotSupported;
  }
  call.get("remapped_rows_corrected", corrected);
  call.get("remapped_rows_uncorrected", uncorrected);
  call.get_bool("remapped_rows_pending", pending);
  call.get_bool("remapped_rows_failure", failure);
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  FAKE_DEVICE_CALL(device);
  return call.get("pcie_gen_current", gen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  FAKE_DEVICE_CALL(device);
  return call.get("pcie_width_current", width);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  FAKE_DEVICE_CALL(device);
  return call.get("pcie_gen_max", gen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  FAKE_DEVICE_CALL(device);
  return call.get("pcie_width_max", width);
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  FAKE_DEVICE_CALL(device);
  return call.get("pcie_replay_counter", value);
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                         unsigned int* kbps) {
  FAKE_DEVICE_CALL(device);
  if (counter == cardiac::nvml::kPcieTxBytes) return call.get("pcie_tx_kb_per_s", kbps);
  if (counter == cardiac::nvml::kPcieRxBytes) return call.get("pcie_rx_kb_per_s", kbps);
  return ReturnCode::kInvalidArgument;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  fake::Call call(__func__, device);
  return processes(call, false, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  fake::Call call(__func__, device);
  return processes(call, false, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                  nvmlProcessInfo_v1_t* infos) {
  fake::Call call(__func__, device);
  return processes(call, false, count, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                      nvmlProcessInfo_t* infos) {
  fake::Call call(__func__, device);
  return processes(call, true, count, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                      nvmlProcessInfo_t* infos) {
  fake::Call call(__func__, device);
  return processes(call, true, count, infos);
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      unsigned int* active) {
  FAKE_DEVICE_CALL(device);
  if (!active) return ReturnCode::kInvalidArgument;
  nvmlReturn_t rc = ReturnCode::kSuccess;
  const Json* l = nvlink(call, link, &rc);
  if (!l) return rc;
  if (!l->contains("active")) return ReturnCode::kNotSupported;
  *active = l->at("active").get<bool>() ? cardiac::nvml::kEnabled : cardiac::nvml::kDisabled;
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link,
                                        unsigned int* version) {
  FAKE_DEVICE_CALL(device);
  if (!version) return ReturnCode::kInvalidArgument;
  nvmlReturn_t rc = ReturnCode::kSuccess;
  const Json* l = nvlink(call, link, &rc);
  if (!l) return rc;
  if (!l->contains("version")) return ReturnCode::kNotSupported;
  *version = l->at("version").get<unsigned int>();
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                             unsigned int counter, unsigned long long* value) {
  FAKE_DEVICE_CALL(device);
  static const char* const kCounters[] = {"replay_errors", "recovery_errors", "crc_flit_errors",
                                          "crc_data_errors"};
  if (!value) return ReturnCode::kInvalidArgument;
  nvmlReturn_t rc = ReturnCode::kSuccess;
  const Json* l = nvlink(call, link, &rc);
  if (!l) return rc;
  if (counter > cardiac::nvml::kNvLinkCrcData) {
    return counter == 4 ? ReturnCode::kNotSupported : ReturnCode::kInvalidArgument;  // 4: ECC_DATA
  }
  if (!l->contains(kCounters[counter])) return ReturnCode::kNotSupported;
  *value = l->at(kCounters[counter]).get<unsigned long long>();
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  FAKE_DEVICE_CALL(device);
  if (!pci) return ReturnCode::kInvalidArgument;
  nvmlReturn_t rc = ReturnCode::kSuccess;
  const Json* l = nvlink(call, link, &rc);
  if (!l) return rc;
  if (!l->contains("remote_pci_bus_id")) return ReturnCode::kNotSupported;
  fake::fill_pci_bus_id(l->at("remote_pci_bus_id").get<std::string>(), pci);
  return ReturnCode::kSuccess;
}

}  // extern "C"
