// SPDX-License-Identifier: Apache-2.0
// Small helpers over the GPU data model: health names, clock event reasons, bus ids.
#include "nvml/gpu.h"

#include "nvml/clock_events.h"
#include "nvml/pci.h"
#include "nvml/types.h"

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::nvml {

std::string_view device_health_name(DeviceHealth h) {
  switch (h) {
    case DeviceHealth::kOk:
      return "ok";
    case DeviceHealth::kLost:
      return "lost";
    case DeviceHealth::kResetRequired:
      return "reset_required";
    case DeviceHealth::kError:
      return "error";
    case DeviceHealth::kUnresponsive:
      return "unresponsive";
    case DeviceHealth::kNotSampled:
      return "not_sampled";
  }
  return "error";
}

const std::vector<ClockEventReason>& clock_event_reasons() {
  static const std::vector<ClockEventReason> kReasons = {
      {kReasonGpuIdle, "gpu_idle", "idle", "idle", false},
      {kReasonApplicationsClocksSetting, "applications_clocks_setting",
       "applications clocks setting", "app_clocks", false},
      {kReasonSwPowerCap, "sw_power_cap", "SW power cap", "sw_power", true},
      {kReasonHwSlowdown, "hw_slowdown", "HW slowdown", "hw_slow", true},
      {kReasonSyncBoost, "sync_boost", "sync boost", "sync_boost", false},
      {kReasonSwThermalSlowdown, "sw_thermal_slowdown", "SW thermal slowdown", "sw_thermal", true},
      {kReasonHwThermalSlowdown, "hw_thermal_slowdown", "HW thermal slowdown", "hw_thermal", true},
      {kReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", "HW power brake slowdown",
       "hw_brake", true},
      {kReasonDisplayClockSetting, "display_clock_setting", "display clock setting", "display",
       false},
  };
  return kReasons;
}

std::vector<ClockEventReason> decode_clock_event_reasons(std::uint64_t mask) {
  std::vector<ClockEventReason> out;
  for (const auto& r : clock_event_reasons()) {
    if (mask & r.bit) out.push_back(r);
  }
  return out;
}

std::uint64_t unknown_clock_event_bits(std::uint64_t mask) {
  for (const auto& r : clock_event_reasons()) mask &= ~r.bit;
  return mask;
}

std::string normalize_pci_bus_id(std::string_view id) {
  id = trim(id);
  // domain:bus:device.function, domain optional ("18:00.0" from old drivers).
  auto parts = split(id, ':');
  if (parts.size() < 2 || parts.size() > 3) return to_lower(id);
  std::string_view domain = parts.size() == 3 ? parts[0] : "0";
  std::string_view bus = parts[parts.size() - 2];
  std::string_view devfn = parts.back();
  auto dot = devfn.find('.');
  if (dot == std::string_view::npos) return to_lower(id);
  auto d = parse_u64(domain, 16);
  auto b = parse_u64(bus, 16);
  auto dev = parse_u64(devfn.substr(0, dot), 16);
  auto fn = parse_u64(devfn.substr(dot + 1), 16);
  if (!d || !b || !dev || !fn || *d > 0xffffffff || *b > 0xff || *dev > 0x1f || *fn > 7) {
    return to_lower(id);
  }
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", *d, *b, *dev, *fn);
}

}  // namespace cardiac::nvml
