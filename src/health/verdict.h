// SPDX-License-Identifier: Apache-2.0
// OK / WARN / FAIL verdicts with reasons in words, for GPUs, the host and the GPU inventory.
// Thresholds follow DCGM's health watches and gpud's components (see docs/status.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/severity.h"
#include "host/host.h"
#include "nvml/gpu.h"

namespace cardiac::health {

enum class Level { kOk = 0, kWarn = 1, kFail = 2 };
std::string_view level_name(Level l);  // "OK", "WARN", "FAIL"

// The one severity mapping (docs/severity.md): status FAIL is an alert's and a finding's
// critical, WARN is warning, OK is info. Every judgement of one reading goes through it.
Severity severity_of(Level l);
Level level_of(Severity s);

// A GPU temperature against the GPU's own limits, as status, the doctor and the default alert
// rules judge it: within 2 °C of shutdown critical; at or within 5 °C of the slowdown threshold
// warning (at slowdown the GPU throttles itself: slow, not broken). nullopt: not hot.
inline constexpr unsigned kSlowdownMarginC = 5;
inline constexpr unsigned kShutdownMarginC = 2;
struct Thermal {
  Severity severity = Severity::kWarning;
  std::string_view code;  // "near_shutdown_temperature" | "near_slowdown_temperature"
};
std::optional<Thermal> judge_temperature(unsigned temperature, std::optional<unsigned> slowdown,
                                         std::optional<unsigned> shutdown);

struct Reason {
  Level level = Level::kOk;
  std::string code;  // stable key for scripts: "gpu_lost", "hw_thermal_slowdown", …
  std::string text;  // for people: "lost from the bus (GPU_IS_LOST)"
};

struct Verdict {
  Level level = Level::kOk;
  std::vector<Reason> reasons;  // worst first
  void add(Level l, std::string code, std::string text);
};

// Whether a kernel function a task sleeps in (its wchan) belongs to the NVIDIA modules:
// nv_* / _nv* (nvidia.ko), os_* (its OS layer), uvm_* (nvidia-uvm.ko). "nvme_…" and other
// "nv…" names belong to other drivers.
bool in_nvidia_driver(std::string_view wchan);

// A GPU reading on its own (health, ECC, thermal, throttling, PCIe, NVLink, power).
Verdict judge_gpu(const nvml::GpuReading& g);
// The host: memory, swap, disks, CPU (when rates exist), D-state processes, NIC errors.
Verdict judge_host(const host::HostSnapshot& h, const host::HostRates* rates);
// The inventory: NVML usable at all, NVML vs the PCI bus, NVML vs the kernel module version.
Verdict judge_inventory(const nvml::GpuSnapshot& gpus, const host::HostSnapshot& h);

}  // namespace cardiac::health
