// SPDX-License-Identifier: Apache-2.0
// NVML reads for one device: identity (cached), then the dynamic values.
#include "nvml/reader.h"

#include <cstring>

#include "core/format.h"
#include "nvml/pci.h"
#include "nvml/return_codes.h"

namespace cardiac::nvml {
namespace {

std::string c_string(const char* buf, size_t cap) {
  return std::string(buf, strnlen(buf, cap));
}

bool stopped(const GpuReading& g) {
  return g.health == DeviceHealth::kLost || g.health == DeviceHealth::kResetRequired;
}

// Facts that do not change while the driver is loaded.
void copy_static(const GpuReading& from, GpuReading& to) {
  to.name = from.name;
  to.uuid = from.uuid;
  to.serial = from.serial;
  to.vbios_version = from.vbios_version;
  to.pci_bus_id = from.pci_bus_id;
  to.pci_device_id = from.pci_device_id;
  to.pci_subsystem_id = from.pci_subsystem_id;
  to.minor_number = from.minor_number;
  to.temperature_slowdown = from.temperature_slowdown;
  to.temperature_shutdown = from.temperature_shutdown;
  to.temperature_memory_max = from.temperature_memory_max;
  to.temperature_gpu_max = from.temperature_gpu_max;
  to.clock_sm_max_mhz = from.clock_sm_max_mhz;
  to.clock_mem_max_mhz = from.clock_mem_max_mhz;
  to.default_app_clock_graphics_mhz = from.default_app_clock_graphics_mhz;
  to.default_app_clock_memory_mhz = from.default_app_clock_memory_mhz;
  to.pcie_gen_max = from.pcie_gen_max;
  to.pcie_width_max = from.pcie_width_max;
  to.power_default_limit_mw = from.power_default_limit_mw;
}

}  // namespace

// Calls api.FIELD(args…) through the hook, or yields FUNCTION_NOT_FOUND when the library
// lacks the entry point (which reads as "absent").
#define CARDIAC_NVML_CALL(field, name, ...) \
  (api.field ? call(current_, name, [&] { return api.field(__VA_ARGS__); }) : kFunctionNotFound)

Reader::Reader(const Library& lib, const Clock& clock, CallHook hook)
    : lib_(lib), clock_(clock), hook_(std::move(hook)) {}

Reader::~Reader() {
  if (initialized_) lib_.api().shutdown();
}

std::string_view init_failure_kind(const Error& e) {
  switch (e.code) {
    case ErrorCode::kNotFound:
      return "driver_not_loaded";
    case ErrorCode::kUnsupported:
      return "version_mismatch";
    case ErrorCode::kPermission:
      return "no_permission";
    default:
      return "init_failed";
  }
}

Result<NvmlSystem> Reader::init() {
  const Api& api = lib_.api();
  current_ = -1;
  nvmlReturn_t rc = call(-1, "nvmlInit", [&] { return api.init(); });
  if (rc != kSuccess) {
    Error f = Error::unavailable("");
    std::string code(return_code_name(rc));
    switch (rc) {
      case kDriverNotLoaded:
        f.code = ErrorCode::kNotFound;
        f.message =
            "the NVIDIA kernel driver is not loaded (nvmlInit: DRIVER_NOT_LOADED). Check "
            "`lsmod | grep nvidia` and the kernel log (`dmesg | grep -i NVRM`); load it with "
            "`modprobe nvidia` or reinstall the driver";
        break;
      case kLibRmVersionMismatch:
        f.code = ErrorCode::kUnsupported;
        f.message =
            "the NVML library and the loaded nvidia kernel module have different versions "
            "(LIB_RM_VERSION_MISMATCH): the driver was upgraded without a reboot. Reboot, or "
            "stop every GPU process and reload the nvidia modules";
        break;
      case kNoPermission:
        f.code = ErrorCode::kPermission;
        f.message =
            "no permission to talk to the NVIDIA driver (NO_PERMISSION): run as root or as a "
            "user allowed to open /dev/nvidiactl and /dev/nvidia*";
        break;
      default:
        f.message = fmt::format("nvmlInit failed: {} ({})", code, lib_.error_string(rc));
    }
    return fail(std::move(f));
  }
  initialized_ = true;

  NvmlSystem sys;
  sys.library_path = lib_.path();
  char buf[kVersionBufferSize] = {};
  if (CARDIAC_NVML_CALL(system_driver_version, "nvmlSystemGetDriverVersion", buf, sizeof(buf)) ==
      kSuccess) {
    sys.driver_version = c_string(buf, sizeof(buf));
  }
  std::memset(buf, 0, sizeof(buf));
  if (CARDIAC_NVML_CALL(system_nvml_version, "nvmlSystemGetNVMLVersion", buf, sizeof(buf)) ==
      kSuccess) {
    sys.nvml_version = c_string(buf, sizeof(buf));
  }
  int cuda = 0;
  if (CARDIAC_NVML_CALL(system_cuda_driver_version, "nvmlSystemGetCudaDriverVersion", &cuda) ==
      kSuccess) {
    sys.cuda_driver_version = cuda;
  }
  unsigned count = 0;
  rc = CARDIAC_NVML_CALL(device_count, "nvmlDeviceGetCount", &count);
  if (rc != kSuccess) {
    return fail(Error::unavailable(fmt::format("nvmlDeviceGetCount failed: {} ({})",
                                               return_code_name(rc), lib_.error_string(rc))));
  }
  sys.device_count = count;
  static_cache_.assign(count, std::nullopt);
  nvlink_remote_.clear();
  return sys;
}

bool Reader::note(GpuReading& g, std::string_view function, nvmlReturn_t rc) {
  if (rc == kSuccess || rc == kNotSupported || rc == kFunctionNotFound || rc == kNoData) {
    return true;
  }
  std::string code(return_code_name(rc));
  g.call_errors[std::string(function)] = code;
  auto set_health = [&](DeviceHealth h) {
    if (g.health == DeviceHealth::kOk || h != DeviceHealth::kError) {
      g.health = h;
      g.health_detail = fmt::format("{} returned {}", function, code);
    }
  };
  if (rc == kGpuIsLost) {
    set_health(DeviceHealth::kLost);
    return false;
  }
  if (rc == kResetRequired) {
    set_health(DeviceHealth::kResetRequired);
    return false;
  }
  if (rc == kUnknown) set_health(DeviceHealth::kError);
  return true;
}

GpuReading Reader::read_device(unsigned index) {
  const Api& api = lib_.api();
  current_ = static_cast<int>(index);
  GpuReading g;
  g.index = index;
  g.sampled_at = clock_.now();
  TimeNs start = clock_.monotonic();

  nvmlDevice_t h = nullptr;
  nvmlReturn_t rc = CARDIAC_NVML_CALL(handle_by_index, "nvmlDeviceGetHandleByIndex", index, &h);
  if (rc != kSuccess) {
    note(g, "nvmlDeviceGetHandleByIndex", rc);
    if (g.health == DeviceHealth::kOk) {
      g.health = DeviceHealth::kError;
      g.health_detail = fmt::format("nvmlDeviceGetHandleByIndex returned {}", return_code_name(rc));
    }
  } else {
    bool cached = index < static_cache_.size() && static_cache_[index].has_value();
    if (cached) {
      copy_static(*static_cache_[index], g);
    } else if (read_identity(h, g) && g.health == DeviceHealth::kOk && !g.uuid.empty() &&
               index < static_cache_.size()) {
      static_cache_[index] = g;
    }
    if (!stopped(g)) read_dynamic(h, g);
  }
  g.sample_duration_us = (clock_.monotonic() - start) / kNsPerUs;
  return g;
}

bool Reader::read_identity(nvmlDevice_t h, GpuReading& g) {
  const Api& api = lib_.api();
  nvmlReturn_t rc = kSuccess;
  char buf[kNameBufferSize] = {};
  // UUID first: the cheapest call that proves the device still answers.
  if (!note(g, "nvmlDeviceGetUUID",
            CARDIAC_NVML_CALL(uuid, "nvmlDeviceGetUUID", h, buf, kUuidBufferSize))) {
    return false;
  }
  g.uuid = c_string(buf, sizeof(buf));
  std::memset(buf, 0, sizeof(buf));
  rc = CARDIAC_NVML_CALL(name, "nvmlDeviceGetName", h, buf, kNameBufferSize);
  if (!note(g, "nvmlDeviceGetName", rc)) return false;
  if (rc == kSuccess) g.name = c_string(buf, sizeof(buf));
  char serial[kSerialBufferSize + 2] = {};
  rc = CARDIAC_NVML_CALL(serial, "nvmlDeviceGetSerial", h, serial, kSerialBufferSize);
  if (!note(g, "nvmlDeviceGetSerial", rc)) return false;
  if (rc == kSuccess) g.serial = c_string(serial, kSerialBufferSize);
  char vbios[kVbiosBufferSize] = {};
  rc = CARDIAC_NVML_CALL(vbios_version, "nvmlDeviceGetVbiosVersion", h, vbios, kVbiosBufferSize);
  if (!note(g, "nvmlDeviceGetVbiosVersion", rc)) return false;
  if (rc == kSuccess) g.vbios_version = c_string(vbios, sizeof(vbios));

  nvmlPciInfo_t pci{};
  rc = CARDIAC_NVML_CALL(pci_info, "nvmlDeviceGetPciInfo", h, &pci);
  if (!note(g, "nvmlDeviceGetPciInfo", rc)) return false;
  if (rc == kSuccess) {
    g.pci_bus_id = normalize_pci_bus_id(c_string(pci.busId, sizeof(pci.busId)));
    g.pci_device_id = pci.pciDeviceId;
    g.pci_subsystem_id = pci.pciSubSystemId;
  }
  unsigned v = 0;
  rc = CARDIAC_NVML_CALL(minor_number, "nvmlDeviceGetMinorNumber", h, &v);
  if (!note(g, "nvmlDeviceGetMinorNumber", rc)) return false;
  if (rc == kSuccess) g.minor_number = v;

  struct Threshold {
    unsigned type;
    std::optional<unsigned> GpuReading::*field;
  };
  for (auto [type, field] : {Threshold{kThresholdSlowdown, &GpuReading::temperature_slowdown},
                             Threshold{kThresholdShutdown, &GpuReading::temperature_shutdown},
                             Threshold{kThresholdMemMax, &GpuReading::temperature_memory_max},
                             Threshold{kThresholdGpuMax, &GpuReading::temperature_gpu_max}}) {
    rc = CARDIAC_NVML_CALL(temperature_threshold, "nvmlDeviceGetTemperatureThreshold", h, type, &v);
    if (!note(g, "nvmlDeviceGetTemperatureThreshold", rc)) return false;
    if (rc == kSuccess) g.*field = v;
  }
  rc = CARDIAC_NVML_CALL(max_clock_info, "nvmlDeviceGetMaxClockInfo", h, kClockSm, &v);
  if (!note(g, "nvmlDeviceGetMaxClockInfo", rc)) return false;
  if (rc == kSuccess) g.clock_sm_max_mhz = v;
  rc = CARDIAC_NVML_CALL(max_clock_info, "nvmlDeviceGetMaxClockInfo", h, kClockMem, &v);
  if (!note(g, "nvmlDeviceGetMaxClockInfo", rc)) return false;
  if (rc == kSuccess) g.clock_mem_max_mhz = v;
  // The defaults belong to the part and its VBIOS; the clocks in force are read every sample.
  rc = CARDIAC_NVML_CALL(default_applications_clock, "nvmlDeviceGetDefaultApplicationsClock", h,
                         kClockGraphics, &v);
  if (!note(g, "nvmlDeviceGetDefaultApplicationsClock", rc)) return false;
  if (rc == kSuccess) g.default_app_clock_graphics_mhz = v;
  rc = CARDIAC_NVML_CALL(default_applications_clock, "nvmlDeviceGetDefaultApplicationsClock", h,
                         kClockMem, &v);
  if (!note(g, "nvmlDeviceGetDefaultApplicationsClock", rc)) return false;
  if (rc == kSuccess) g.default_app_clock_memory_mhz = v;
  rc = CARDIAC_NVML_CALL(pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration", h, &v);
  if (!note(g, "nvmlDeviceGetMaxPcieLinkGeneration", rc)) return false;
  if (rc == kSuccess) g.pcie_gen_max = v;
  rc = CARDIAC_NVML_CALL(pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth", h, &v);
  if (!note(g, "nvmlDeviceGetMaxPcieLinkWidth", rc)) return false;
  if (rc == kSuccess) g.pcie_width_max = v;
  rc = CARDIAC_NVML_CALL(power_default_limit, "nvmlDeviceGetPowerManagementDefaultLimit", h, &v);
  if (!note(g, "nvmlDeviceGetPowerManagementDefaultLimit", rc)) return false;
  if (rc == kSuccess) g.power_default_limit_mw = v;
  return true;
}

}  // namespace cardiac::nvml
