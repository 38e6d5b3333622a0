// SPDX-License-Identifier: Apache-2.0
// Device entry points for identity, utilization, memory, thermals, power and clocks.
#include <cstdio>
#include <string>

#include "exports.h"
#include "state.h"

using cardiac::nvml::ReturnCode;
using fake::Json;

namespace {

unsigned u32(const Json& device, const char* key) {
  return device.at(key).get<unsigned>();
}

// Fills nvmlPciInfo_t from the device's "pci_bus_id" and its device and subsystem ids.
void fill_pci(const Json& device, nvmlPciInfo_t* pci) {
  fake::fill_pci_bus_id(device.at("pci_bus_id").get<std::string>(), pci);
  pci->pciDeviceId = device.value("pci_device_id", 0u);
  pci->pciSubSystemId = device.value("pci_subsystem_id", 0u);
}

nvmlReturn_t clocks_event_reasons(fake::Call& call, unsigned long long* reasons) {
  if (call.status() != ReturnCode::kSuccess) return call.status();
  return call.get("clock_event_reasons", reasons);
}

}  // namespace

void fake::fill_pci_bus_id(const std::string& bus_id, nvmlPciInfo_t* pci) {
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &function);
  *pci = nvmlPciInfo_t{};
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", domain, bus, dev, function);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xFFFF,
                bus & 0xFF, dev & 0xFF, function & 0xF);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
}

extern "C" {

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  FAKE_DEVICE_CALL(device);
  return call.get_string("name", name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  FAKE_DEVICE_CALL(device);
  return call.get_string("uuid", uuid, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  FAKE_DEVICE_CALL(device);
  return call.get_string("serial", serial, length);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version, unsigned int length) {
  FAKE_DEVICE_CALL(device);
  return call.get_string("vbios_version", version, length);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  FAKE_DEVICE_CALL(device);
  if (!index) return ReturnCode::kInvalidArgument;
  *index = call.index();
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  FAKE_DEVICE_CALL(device);
  return call.get("minor_number", minor);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_DEVICE_CALL(device);
  if (!pci) return ReturnCode::kInvalidArgument;
  if (!call.device().contains("pci_bus_id")) return ReturnCode::kNotSupported;
  fill_pci(call.device(), pci);
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int* mode) {
  FAKE_DEVICE_CALL(device);
  return call.get_bool("persistence_mode", mode);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  FAKE_DEVICE_CALL(device);
  if (!pending) return ReturnCode::kInvalidArgument;
  nvmlReturn_t rc = call.get_bool("mig_mode", current);
  if (rc == ReturnCode::kSuccess) *pending = *current;
  return rc;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* util) {
  FAKE_DEVICE_CALL(device);
  if (!util) return ReturnCode::kInvalidArgument;
  const Json& d = call.device();
  if (!d.contains("utilization_gpu") || !d.contains("utilization_memory")) {
    return ReturnCode::kNotSupported;
  }
  util->gpu = u32(d, "utilization_gpu");
  util->memory = u32(d, "utilization_memory");
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  FAKE_DEVICE_CALL(device);
  if (!memory) return ReturnCode::kInvalidArgument;
  if (memory->version != cardiac::nvml::kNvmlMemoryV2Version) {
    return ReturnCode::kArgumentVersionMismatch;
  }
  const Json& d = call.device();
  // Without memory_reserved the v2 call is unsupported, so a scenario can drive the v1 fallback.
  for (const char* key : {"memory_total", "memory_used", "memory_free", "memory_reserved"}) {
    if (!d.contains(key)) return ReturnCode::kNotSupported;
  }
  memory->total = d["memory_total"].get<unsigned long long>();
  memory->reserved = d["memory_reserved"].get<unsigned long long>();
  memory->free = d["memory_free"].get<unsigned long long>();
  memory->used = d["memory_used"].get<unsigned long long>();
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_DEVICE_CALL(device);
  if (!memory) return ReturnCode::kInvalidArgument;
  const Json& d = call.device();
  for (const char* key : {"memory_total", "memory_used", "memory_free"}) {
    if (!d.contains(key)) return ReturnCode::kNotSupported;
  }
  memory->total = d["memory_total"].get<unsigned long long>();
  memory->free = d["memory_free"].get<unsigned long long>();
  // The v1 structure has no reserved field: the driver counts it as used.
  memory->used = d["memory_used"].get<unsigned long long>() + d.value("memory_reserved", 0ull);
  return ReturnCode::kSuccess;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensor,
                                      unsigned int* temp) {
  FAKE_DEVICE_CALL(device);
  if (sensor != cardiac::nvml::kTemperatureGpu) return ReturnCode::kInvalidArgument;
  return call.get("temperature", temp);
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, unsigned int type,
                                               unsigned int* temp) {
  FAKE_DEVICE_CALL(device);
  switch (type) {
    case cardiac::nvml::kThresholdShutdown:
      return call.get("temperature_shutdown", temp);
    case cardiac::nvml::kThresholdSlowdown:
      return call.get("temperature_slowdown", temp);
    case cardiac::nvml::kThresholdMemMax:
      return call.get("temperature_memory_max", temp);
    case cardiac::nvml::kThresholdGpuMax:
      return call.get("temperature_gpu_max", temp);
    default:
      // Acoustic and GPS thresholds (4..7) exist in NVML but not in scenarios.
      return type <= 7 ? ReturnCode::kNotSupported : ReturnCode::kInvalidArgument;
  }
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  FAKE_DEVICE_CALL(device);
  return call.get("fan_speed", speed);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  FAKE_DEVICE_CALL(device);
  return call.get("power_usage_mw", power);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  FAKE_DEVICE_CALL(device);
  return call.get("power_limit_mw", limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* limit) {
  FAKE_DEVICE_CALL(device);
  return call.get("power_default_limit_mw", limit);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  FAKE_DEVICE_CALL(device);
  return call.get("energy_mj", energy);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int* mhz) {
  FAKE_DEVICE_CALL(device);
  switch (type) {
    case cardiac::nvml::kClockGraphics:
      return call.get("clock_graphics_mhz", mhz);
    case cardiac::nvml::kClockSm:
      return call.get("clock_sm_mhz", mhz);
    case cardiac::nvml::kClockMem:
      return call.get("clock_mem_mhz", mhz);
    case cardiac::nvml::kClockVideo:
      return ReturnCode::kNotSupported;
    default:
      return ReturnCode::kInvalidArgument;
  }
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type, unsigned int* mhz) {
  FAKE_DEVICE_CALL(device);
  switch (type) {
    case cardiac::nvml::kClockGraphics:  // graphics and SM share one clock domain on datacenter
                                         // parts
    case cardiac::nvml::kClockSm:
      return call.get("clock_sm_max_mhz", mhz);
    case cardiac::nvml::kClockMem:
      return call.get("clock_mem_max_mhz", mhz);
    case cardiac::nvml::kClockVideo:
      return ReturnCode::kNotSupported;
    default:
      return ReturnCode::kInvalidArgument;
  }
}

// Application clocks are set per graphics and memory domain (`nvidia-smi -ac MEM,GRAPHICS`);
// the fake has no values for SM or video and answers NOT_SUPPORTED for them.
nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, unsigned int type,
                                            unsigned int* mhz) {
  FAKE_DEVICE_CALL(device);
  switch (type) {
    case cardiac::nvml::kClockGraphics:
      return call.get("app_clock_graphics_mhz", mhz);
    case cardiac::nvml::kClockMem:
      return call.get("app_clock_memory_mhz", mhz);
    case cardiac::nvml::kClockSm:
    case cardiac::nvml::kClockVideo:
      return ReturnCode::kNotSupported;
    default:
      return ReturnCode::kInvalidArgument;
  }
}

nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, unsigned int type,
                                                   unsigned int* mhz) {
  FAKE_DEVICE_CALL(device);
  switch (type) {
    case cardiac::nvml::kClockGraphics:
      return call.get("default_app_clock_graphics_mhz", mhz);
    case cardiac::nvml::kClockMem:
      return call.get("default_app_clock_memory_mhz", mhz);
    case cardiac::nvml::kClockSm:
    case cardiac::nvml::kClockVideo:
      return ReturnCode::kNotSupported;
    default:
      return ReturnCode::kInvalidArgument;
  }
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* reasons) {
  fake::Call call(__func__, device);
  return clocks_event_reasons(call, reasons);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* reasons) {
  fake::Call call(__func__, device);
  return clocks_event_reasons(call, reasons);
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, unsigned int* pstate) {
  FAKE_DEVICE_CALL(device);
  return call.get("pstate", pstate);
}

}  // extern "C"
