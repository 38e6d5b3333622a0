// SPDX-License-Identifier: Apache-2.0
// Our own declarations of the NVML ABI: only what cardiac calls. Never include NVIDIA's nvml.h.
//
// Layouts and constants are checked against NVIDIA's public header (nvml.h as shipped by the
// CUDA toolkit and mirrored in NVIDIA/go-nvml pkg/nvml/nvml.h); the static_asserts below pin
// the sizes and offsets so that a slip shows at build time, not as garbage on a real GPU.
#pragma once

#include <cstddef>

extern "C" {

typedef int nvmlReturn_t;  // NOLINT: C ABI name
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

struct nvmlPciInfo_t {  // nvmlPciInfo_st, the _v3 layout
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id << 16 | vendor id
  unsigned int pciSubSystemId;
  char busId[32];  // "00000000:3B:00.0"
};

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct nvmlMemory_t {  // v1: used includes reserved
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {
  unsigned int version;  // must be kNvmlMemoryV2Version
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlProcessInfo_v1_t {  // for the unversioned *RunningProcesses symbols
  unsigned int pid;
  unsigned long long usedGpuMemory;
};

struct nvmlProcessInfo_t {  // _v2 and _v3 of *RunningProcesses share this layout
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {  // one entry of nvmlDeviceGetFieldValues
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // Xid number for XidCriticalError, 999 = unknown Xid
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

}  // extern "C"

static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16);
static_assert(sizeof(nvmlProcessInfo_t) == 24 && offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8);
static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16);

namespace cardiac::nvml {

// NVML_STRUCT_VERSION(Memory, 2) = sizeof | 2 << 24.
constexpr unsigned int kNvmlMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2u << 24);

// nvmlReturn_t values.
enum ReturnCode : int {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kNoPermission = 4,
  kAlreadyInitialized = 5,
  kNotFound = 6,
  kInsufficientSize = 7,
  kInsufficientPower = 8,
  kDriverNotLoaded = 9,
  kTimeout = 10,
  kIrqIssue = 11,
  kLibraryNotFound = 12,
  kFunctionNotFound = 13,
  kCorruptedInforom = 14,
  kGpuIsLost = 15,
  kResetRequired = 16,
  kOperatingSystem = 17,
  kLibRmVersionMismatch = 18,
  kInUse = 19,
  kMemory = 20,
  kNoData = 21,
  kVgpuEccNotSupported = 22,
  kInsufficientResources = 23,
  kFreqNotSupported = 24,
  kArgumentVersionMismatch = 25,
  kDeprecated = 26,
  kNotReady = 27,
  kGpuNotFound = 28,
  kInvalidState = 29,
  kResetTypeNotSupported = 30,
  kUnknown = 999,
};

// Buffer sizes from nvml.h.
constexpr unsigned kNameBufferSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBufferSize = 96;     // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kSerialBufferSize = 30;   // NVML_DEVICE_SERIAL_BUFFER_SIZE
constexpr unsigned kVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr unsigned kVbiosBufferSize = 32;    // NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE
constexpr unsigned kNvLinkMaxLinks = 18;     // links probed (the API-13 header allows 36)

// nvmlTemperatureSensors_t / nvmlTemperatureThresholds_t.
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (driver 550 and later): NVML_GPU_RECOVERY_ACTION_NONE 0,
// GPU_RESET 1, NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4.
constexpr unsigned kFieldRecoveryAction = 230;
constexpr unsigned kTemperatureGpu = 0;
constexpr unsigned kThresholdShutdown = 0;
constexpr unsigned kThresholdSlowdown = 1;
constexpr unsigned kThresholdMemMax = 2;
constexpr unsigned kThresholdGpuMax = 3;

// nvmlClockType_t.
constexpr unsigned kClockGraphics = 0;
constexpr unsigned kClockSm = 1;
constexpr unsigned kClockMem = 2;
constexpr unsigned kClockVideo = 3;

// nvmlMemoryErrorType_t / nvmlEccCounterType_t.
constexpr unsigned kEccCorrected = 0;
constexpr unsigned kEccUncorrected = 1;
constexpr unsigned kEccVolatile = 0;
constexpr unsigned kEccAggregate = 1;

// nvmlPageRetirementCause_t.
constexpr unsigned kRetiredMultipleSbe = 0;
constexpr unsigned kRetiredDbe = 1;

// nvmlPcieUtilCounter_t.
constexpr unsigned kPcieTxBytes = 0;
constexpr unsigned kPcieRxBytes = 1;

// nvmlNvLinkErrorCounter_t.
constexpr unsigned kNvLinkReplay = 0;
constexpr unsigned kNvLinkRecovery = 1;
constexpr unsigned kNvLinkCrcFlit = 2;
constexpr unsigned kNvLinkCrcData = 3;

// nvmlEnableState_t.
constexpr unsigned kDisabled = 0;
constexpr unsigned kEnabled = 1;

// Event type bits.
constexpr unsigned long long kEventSingleBitEcc = 0x1;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventPState = 0x4;
constexpr unsigned long long kEventXidCritical = 0x8;
constexpr unsigned long long kEventClock = 0x10;

// Clock event (throttle) reason bits.
constexpr unsigned long long kReasonGpuIdle = 0x1;
constexpr unsigned long long kReasonApplicationsClocksSetting = 0x2;
constexpr unsigned long long kReasonSwPowerCap = 0x4;
constexpr unsigned long long kReasonHwSlowdown = 0x8;
constexpr unsigned long long kReasonSyncBoost = 0x10;
constexpr unsigned long long kReasonSwThermalSlowdown = 0x20;
constexpr unsigned long long kReasonHwThermalSlowdown = 0x40;
constexpr unsigned long long kReasonHwPowerBrakeSlowdown = 0x80;
constexpr unsigned long long kReasonDisplayClockSetting = 0x100;

}  // namespace cardiac::nvml
