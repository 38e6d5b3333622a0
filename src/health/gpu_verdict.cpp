// SPDX-License-Identifier: Apache-2.0
// Per-GPU verdict. Thresholds: DCGM health watches (any volatile DBE fails, pending page
// retirement warns, 63 retired pages fail, row-remap failure fails) and gpud's components.
#include <string>

#include "core/format.h"
#include "health/faults.h"
#include "health/verdict.h"
#include "nvml/clock_events.h"
#include "nvml/types.h"

namespace cardiac::health {
namespace {

constexpr unsigned kPcieLoadUtilization = 50;  // judge the link only under load
constexpr std::uint64_t kThermalOrBrakeBits =
    nvml::kReasonHwSlowdown | nvml::kReasonHwThermalSlowdown | nvml::kReasonHwPowerBrakeSlowdown |
    nvml::kReasonSwThermalSlowdown;

void judge_state(const nvml::GpuReading& g, Verdict& v) {
  using nvml::DeviceHealth;
  switch (g.health) {
    case DeviceHealth::kOk:
      return;
    case DeviceHealth::kLost:
      v.add(Level::kFail, "gpu_lost", "lost from the bus (GPU_IS_LOST)");
      return;
    case DeviceHealth::kResetRequired:
      v.add(Level::kFail, "reset_required", "needs a GPU reset (RESET_REQUIRED)");
      return;
    case DeviceHealth::kUnresponsive:
      v.add(Level::kFail, "unresponsive", "driver not answering: " + g.health_detail);
      return;
    case DeviceHealth::kError:
      v.add(Level::kFail, "nvml_error", "NVML error: " + g.health_detail);
      return;
    case DeviceHealth::kNotSampled:
      v.add(Level::kWarn, "not_sampled", g.health_detail);
      return;
  }
}

void judge_memory_errors(const nvml::GpuReading& g, Verdict& v) {
  if (g.ecc_volatile_uncorrected.value_or(0) > 0) {
    v.add(Level::kFail, "ecc_dbe",
          fmt::format("{} uncorrectable (double-bit) ECC error(s) since the driver loaded",
                      *g.ecc_volatile_uncorrected));
  }
  if (g.remapped_rows_failure.value_or(false)) {
    v.add(Level::kFail, "row_remap_failed", "row remapping failed: the GPU needs replacing");
  }
  if (g.remapped_rows_uncorrected.value_or(0) >= kUncorrectableRemapsWarn) {
    v.add(Level::kWarn, "row_remaps_many",
          fmt::format("{} rows remapped for uncorrectable errors: plan to replace the GPU",
                      *g.remapped_rows_uncorrected));
  }
  if (g.remapped_rows_pending.value_or(false)) {
    v.add(Level::kWarn, "row_remap_pending", "row remap pending: reset the GPU to apply it");
  }
  if (g.retired_pages_pending.value_or(false)) {
    v.add(Level::kWarn, "page_retirement_pending",
          "page retirement pending: reset the GPU or reboot to apply it");
  }
  unsigned retired = g.retired_pages_sbe.value_or(0) + g.retired_pages_dbe.value_or(0);
  if (retired >= kMaxRetiredPages) {
    v.add(Level::kFail, "retired_pages_limit",
          fmt::format("{} retired pages (limit {}): the GPU needs replacing", retired,
                      kMaxRetiredPages));
  }
  if (g.ecc_enabled && g.ecc_pending_enabled && *g.ecc_enabled != *g.ecc_pending_enabled) {
    v.add(
        Level::kWarn, "ecc_mode_pending",
        fmt::format("ECC will be {} after the next reset", *g.ecc_pending_enabled ? "on" : "off"));
  }
}

void judge_thermal(const nvml::GpuReading& g, Verdict& v) {
  std::uint64_t reasons = g.clock_event_reasons.value_or(0);
  std::string temp = g.temperature ? fmt::format(" at {} °C", *g.temperature) : "";
  std::string threshold = g.temperature_slowdown
                              ? fmt::format(", slowdown threshold {} °C", *g.temperature_slowdown)
                              : "";
  for (const auto& r : nvml::decode_clock_event_reasons(reasons & kThermalOrBrakeBits)) {
    bool thermal =
        r.bit == nvml::kReasonHwThermalSlowdown || r.bit == nvml::kReasonSwThermalSlowdown;
    // HW slowdown is reported together with its cause; name it once.
    if (r.bit == nvml::kReasonHwSlowdown &&
        (reasons & (nvml::kReasonHwThermalSlowdown | nvml::kReasonHwPowerBrakeSlowdown))) {
      continue;
    }
    v.add(Level::kWarn, std::string(r.name),
          fmt::format("{}{}{}", r.text, thermal || r.bit == nvml::kReasonHwSlowdown ? temp : "",
                      thermal ? threshold : ""));
  }
  const auto hot = g.temperature ? judge_temperature(*g.temperature, g.temperature_slowdown,
                                                     g.temperature_shutdown)
                                 : std::nullopt;
  if (hot && hot->severity == Severity::kCritical) {
    v.add(level_of(hot->severity), std::string(hot->code),
          fmt::format("{} °C, {} °C from the shutdown threshold {} °C", *g.temperature,
                      *g.temperature_shutdown - std::min(*g.temperature, *g.temperature_shutdown),
                      *g.temperature_shutdown));
  } else if (hot && !(reasons & kThermalOrBrakeBits)) {
    v.add(level_of(hot->severity), std::string(hot->code),
          fmt::format("{} °C, close to the slowdown threshold {} °C", *g.temperature,
                      *g.temperature_slowdown));
  }
}

void judge_pcie_power_links(const nvml::GpuReading& g, Verdict& v) {
  bool loaded = g.utilization_gpu.value_or(0) >= kPcieLoadUtilization;
  if (loaded && g.pcie_gen_current && g.pcie_gen_max && g.pcie_width_current && g.pcie_width_max &&
      (*g.pcie_gen_current < *g.pcie_gen_max || *g.pcie_width_current < *g.pcie_width_max)) {
    v.add(Level::kWarn, "pcie_degraded",
          fmt::format("PCIe link gen{} x{} under load, capable of gen{} x{}", *g.pcie_gen_current,
                      *g.pcie_width_current, *g.pcie_gen_max, *g.pcie_width_max));
  }
  if (g.power_limit_mw && g.power_default_limit_mw &&
      *g.power_limit_mw < *g.power_default_limit_mw) {
    v.add(Level::kWarn, "power_limit_lowered",
          fmt::format("power limit {} W is below the default {} W", *g.power_limit_mw / 1000,
                      *g.power_default_limit_mw / 1000));
  }
  bool any_active = false;
  for (const auto& l : g.nvlinks) any_active = any_active || l.active;
  if (any_active) {
    for (const auto& l : g.nvlinks) {
      if (!l.active) v.add(Level::kWarn, "nvlink_down", fmt::format("NVLink {} is down", l.link));
    }
  }
}

}  // namespace

Verdict judge_gpu(const nvml::GpuReading& g) {
  Verdict v;
  judge_state(g, v);
  if (g.health != nvml::DeviceHealth::kOk) return v;
  judge_memory_errors(g, v);
  judge_thermal(g, v);
  judge_pcie_power_links(g, v);
  return v;
}

}  // namespace cardiac::health
