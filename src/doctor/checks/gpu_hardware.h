// SPDX-License-Identifier: Apache-2.0
// Private to the GPU hardware check (gpu_hardware.cpp runs it): what its family files share.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"
#include "health/faults.h"
#include "health/verdict.h"
#include "nvml/clock_events.h"
#include "nvml/types.h"

namespace cardiac::doctor::hardware_detail {

using check_util::counter_span;
using check_util::describe;
using check_util::evidence;
using check_util::GpuWindow;
using check_util::make_finding;
using check_util::Sample;
using check_util::smi_target;

// The memory-repair limits are health's (health/faults.h), as the status verdict reads them.
using health::kMaxRetiredPages;
using health::kUncorrectableRemapsWarn;
constexpr unsigned kRetiredDbeSoftLimit = 15;  // DCGM: > 15 DBE pages and > 1 new in a week
// A volatile corrected count this high since the driver loaded is a weak card even when the
// window is too short to see it move (healthy HBM shows none).
constexpr std::uint64_t kSbeHighCount = 1000;
// The thermal margins are health's (health/verdict.h): status and the doctor judge alike.
using health::kShutdownMarginC;
using health::kSlowdownMarginC;
constexpr unsigned kBusyUtilization = 50;    // as the status verdict: judge the link under load
constexpr double kNvlinkCrcPerSecond = 100;  // DCGM_LIMIT_MAX_NVLINK_CRC_ERROR
constexpr DurationNs kWeek = DurationNs{7} * 24 * 3600 * kNsPerSec;

constexpr std::uint64_t kThermalBits =
    nvml::kReasonHwThermalSlowdown | nvml::kReasonSwThermalSlowdown;

inline std::uint64_t reasons(const nvml::GpuReading& r) {
  return r.clock_event_reasons.value_or(0);
}

inline std::string watts(unsigned mw) {
  return fmt::format("{} W", mw / 1000);
}

// --- History from the agent store.

inline const std::vector<std::pair<TimeNs, double>>* history_series(const DoctorInput& in,
                                                                    const GpuRef& g,
                                                                    std::string_view metric) {
  for (const auto& h : in.history) {
    bool same = (!g.uuid.empty() && h.uuid == g.uuid) || (h.uuid.empty() && g.index == h.gpu);
    if (!same) continue;
    for (const auto& [name, points] : h.series) {
      if (name == metric || name == fmt::format("cardiac_gpu_{}", metric)) return &points;
    }
  }
  return nullptr;
}

// --- Device health.

// ECC and memory repair (gpu_memory.cpp).
void check_dbe(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out);
void check_sbe(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out);
void check_row_remap(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out);
void check_retired_pages(const DoctorInput& in, const GpuWindow& w, const GpuRef& g,
                         std::vector<Finding>& out);

// Thermal and power (gpu_thermal_power.cpp).
void check_thermal(const DoctorInput& in, const std::vector<GpuWindow>& all, const GpuWindow& w,
                   const GpuRef& g, std::vector<Finding>& out);
void check_power(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out);

// PCIe and NVLink (gpu_pcie_nvlink.cpp).
void check_pcie_link(const DoctorInput& in, const GpuWindow& w, const GpuRef& g,
                     std::vector<Finding>& out);
void check_pcie_replays(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out);
void check_nvlink(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out);

// --- Inventory (gpu_inventory.cpp).

// A GPU that never told NVML its bus id (lost from the start) is the one GPU on the bus that
// NVML does not claim, when there is exactly one of each: NVML index → that bus id.
std::map<unsigned, std::string> resolve_anonymous(const std::vector<GpuWindow>& windows,
                                                  const host::HostSnapshot* h);
void check_missing(const DoctorInput& in, const std::vector<GpuWindow>& windows,
                   const std::map<unsigned, std::string>& anonymous, const GpuMap& map,
                   std::vector<Finding>& out);
void check_expected_count(const DoctorInput& in, std::vector<Finding>& out);

}  // namespace cardiac::doctor::hardware_detail
