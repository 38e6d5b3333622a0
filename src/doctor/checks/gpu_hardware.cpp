// SPDX-License-Identifier: Apache-2.0
// GPU hardware checks over the sampling window, one family per file: device health here (lost,
// reset required), ECC and memory repair (gpu_memory.cpp), thermal and power
// (gpu_thermal_power.cpp), PCIe and NVLink (gpu_pcie_nvlink.cpp), GPUs missing from NVML or below
// the expected count (gpu_inventory.cpp). Thresholds are DCGM's health watches (health-checks.md
// 2.2) and, where the status verdict judges the same thing (health/gpu_verdict.cpp), the same
// numbers, so that `status` and `doctor` never disagree on one reading.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/gpu_hardware.h"

namespace cardiac::doctor {

using namespace hardware_detail;  // NOLINT(google-build-using-namespace): private helpers

namespace {

void check_health(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const Sample* lost = nullptr;
  const Sample* reset = nullptr;
  const Sample* error = nullptr;
  for (const auto& s : w.all) {
    auto h = s.reading->health;
    if (h == nvml::DeviceHealth::kLost && !lost) lost = &s;
    if (h == nvml::DeviceHealth::kResetRequired && !reset) reset = &s;
    if (h == nvml::DeviceHealth::kError && !error) error = &s;
  }
  std::string who = describe(g);
  std::string answered_before =
      !w.ok.empty() && (lost || reset) && w.ok.front().time < (lost ? lost : reset)->time
          ? " It answered normally earlier in the window, so it failed while cardiac watched."
          : "";
  if (lost) {
    Finding f = make_finding(
        "gpu.lost", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} has fallen off the bus (NVML: GPU_IS_LOST)", who),
        "NVML can no longer reach this GPU: every query returns GPU_IS_LOST. The card stopped "
        "answering on the PCIe bus (Xid 79 in the kernel log is the usual companion); its jobs "
        "have failed and it will not come back without a reset or a reboot." +
            answered_before);
    f.evidence.push_back(evidence("reading", lost->reading->health_detail, lost->time));
    f.actions = {
        "Drain the machine and reboot it (a cold power cycle if the GPU is still missing "
        "afterwards): a GPU that fell off the bus rarely survives a GPU reset",
        "Read the kernel log just before the loss for Xid 79, PCIe AER errors or power events "
        "(`cardiac doctor --since 24h` lists them)",
        "If it falls off again after the reboot, the card, its slot, riser or power cabling is "
        "failing: do the cross-check below",
    };
    out.push_back(std::move(f));
  } else if (reset) {
    Finding f = make_finding(
        "gpu.reset_required", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
        fmt::format("{} needs a reset (NVML: RESET_REQUIRED)", who),
        "The driver refuses further work on this GPU until it is reset, usually after an "
        "uncontained error (Xid 95) or a fault the driver cannot recover from." +
            answered_before);
    f.evidence.push_back(evidence("reading", reset->reading->health_detail, reset->time));
    f.actions = {
        fmt::format("Stop the processes using {} and reset it: `sudo nvidia-smi -r -i {}` "
                    "(reboot if the reset is refused or hangs)",
                    who, smi_target(g)),
        "Look in the kernel log for the Xid that preceded it (`cardiac doctor` lists them)",
        "If it needs a reset again soon, do the cross-check below",
    };
    out.push_back(std::move(f));
  } else if (error) {
    bool last_bad = w.last().health == nvml::DeviceHealth::kError;
    Finding f = make_finding(
        "gpu.nvml_error", Category::kHardware, Severity::kWarning, Confidence::kLow, g,
        fmt::format("NVML reports an unknown error on {}", who),
        fmt::format("A basic NVML query on this GPU failed with an unexpected error {}. This "
                    "is often the first sign of a GPU that is about to be lost or needs a reset.",
                    last_bad ? "in the latest sample" : "earlier in the window"));
    f.evidence.push_back(evidence("reading", error->reading->health_detail, error->time));
    f.actions = {
        "Check the kernel log for Xids on this GPU (`cardiac doctor` lists them)",
        fmt::format("Run `cardiac status` again; if the error stays, reset the GPU when idle: "
                    "`sudo nvidia-smi -r -i {}`",
                    smi_target(g)),
    };
    out.push_back(std::move(f));
  }
}

GpuRef window_ref(const GpuWindow& w, const std::map<unsigned, std::string>& anonymous,
                  const GpuMap& map) {
  const nvml::GpuReading* id = &w.last();
  for (auto it = w.all.rbegin(); it != w.all.rend(); ++it) {
    if (!it->reading->uuid.empty() || !it->reading->pci_bus_id.empty()) {
      id = it->reading;
      break;
    }
  }
  GpuRef g = check_util::gpu_ref(*id, map);
  if (g.pci_bus_id.empty()) {
    if (auto it = anonymous.find(w.index); it != anonymous.end()) {
      GpuRef known = map.by_bus_id(it->second);
      g.pci_bus_id = it->second;
      if (g.uuid.empty()) g.uuid = known.uuid;
      if (g.serial.empty()) g.serial = known.serial;
    }
  }
  return g;
}

}  // namespace

void check_gpu_hardware(const DoctorInput& in, std::vector<Finding>& out) {
  GpuMap map(in);
  auto windows = check_util::gpu_windows(in);
  auto anonymous = resolve_anonymous(windows, in.last_host());
  for (const auto& w : windows) {
    GpuRef g = window_ref(w, anonymous, map);
    check_health(w, g, out);
    if (w.ok.empty()) continue;
    check_dbe(w, g, out);
    check_sbe(w, g, out);
    check_row_remap(w, g, out);
    check_retired_pages(in, w, g, out);
    check_thermal(in, windows, w, g, out);
    check_power(w, g, out);
    check_pcie_link(in, w, g, out);
    check_pcie_replays(w, g, out);
    check_nvlink(w, g, out);
  }
  check_missing(in, windows, anonymous, map, out);
  check_expected_count(in, out);
}

}  // namespace cardiac::doctor
