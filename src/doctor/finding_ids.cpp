// SPDX-License-Identifier: Apache-2.0
// The registry of finding ids. The fixed ids are listed by hand, per family as in README.md,
// so that adding a check means adding its ids here (the tests scan checks/*.cpp for id
// literals and fail on one missing); the Xid ids come from the catalog.
#include "doctor/finding_ids.h"

#include <algorithm>

#include "core/format.h"
#include "health/faults.h"

namespace cardiac::doctor {
namespace {

constexpr std::string_view kFixedIds[] = {
    // kernel log (checks/kernel*.cpp)
    "kernel.aer",
    "kernel.fabric_manager",
    "kernel.fallen_off_bus",
    "kernel.gsp_timeout",
    "kernel.hung_task",
    "kernel.hung_task.other",
    "kernel.ib",
    "kernel.init_failure",
    "kernel.nvlink",
    "kernel.reset_required",
    "kernel.sxid",
    // the kernel log itself (checks/kernel_read.cpp)
    "kmsg.empty",
    "kmsg.incomplete",
    "kmsg.long_lines",
    "kmsg.partly_recognised",
    "kmsg.unrecognised",
    // GPU hardware (checks/gpu_*.cpp)
    "gpu.count_below_expected",
    "gpu.ecc.dbe",
    "gpu.ecc.dbe_past",
    "gpu.ecc.sbe_rate",
    "gpu.fail_slow",
    "gpu.fan.max",
    "gpu.hw_slowdown",
    "gpu.lost",
    "gpu.missing_from_nvml",
    "gpu.nvlink.down",
    "gpu.nvlink.errors",
    "gpu.nvml_error",
    "gpu.pcie.degraded",
    "gpu.pcie.replays",
    "gpu.power.brake",
    "gpu.power.capped",
    "gpu.power.limit_below_default",
    "gpu.reset_required",
    "gpu.retired_pages.dbe",
    "gpu.retired_pages.limit",
    "gpu.retired_pages.pending",
    "gpu.row_remap.failed",
    "gpu.row_remap.pending",
    "gpu.row_remap.uncorrectable",
    "gpu.thermal.near_shutdown",
    "gpu.thermal.near_slowdown",
    "gpu.thermal.slowdown",
    // driver and software (checks/driver.cpp)
    "driver.dstate_nvidia",
    "driver.no_permission",
    "driver.not_loaded",
    "driver.nvml_failed",
    "driver.nvml_hung",
    "driver.nvml_init_failed",
    "driver.nvml_missing",
    "driver.nvml_slow",
    "driver.nvml_unusable",
    "driver.orphaned_gpu_memory",
    "driver.persistence_off",
    "driver.version_mismatch",
    "driver.zero_gpus",
    // resources (checks/resources.cpp)
    "resources.cpu_saturated",
    "resources.data_loading",
    "resources.disk_full",
    "resources.gpu_starved",
    "resources.io_wait",
    "resources.memory_low",
    "resources.swapping",
    "resources.vram_full",
    "resources.vram_preallocated",
    // serving (checks/serving.cpp)
    "serving.batching",
    "serving.engine_unreachable",
    "serving.kv_cache_full",
    "serving.vram_growth",
    // network (checks/network.cpp, checks/nic.cpp)
    "network.dns",
    "network.jitter",
    "network.latency",
    "network.link_down",
    "network.loss",
    "network.nic_errors",
    "network.nic_saturated",
    "network.none",
    "network.port_closed",
    "network.probe_failed",
    // security (checks/traffic.cpp, checks/security.cpp)
    "security.deleted_executable",
    "security.gpu_cryptojacking",
    "security.new_listening_port",
    "security.tmp_executable",
    "security.uid0_account",
    "security.unknown_gpu_process",
    "security.uplink_flood",
    // configuration drift (checks/drift.cpp, --baseline)
    "drift.clocks",
    "drift.cpu_governor",
    "drift.cuda",
    "drift.driver",
    "drift.gpu",
    "drift.gpu_mode",
    "drift.hugepages",
    "drift.iommu",
    "drift.kernel",
    "drift.kernel_params",
    "drift.library",
    "drift.numa",
    "drift.os",
    "drift.other",
    "drift.pcie",
    "drift.power_limit",
    // history (checks/history.cpp, the agent store's incidents)
    "history.node_suspect",
    "history.repeat_offender",
};

// Whether `id` is "xid.<N>" for a decimal N.
bool is_xid_id(std::string_view id) {
  constexpr std::string_view kPrefix = "xid.";
  if (!id.starts_with(kPrefix) || id.size() == kPrefix.size()) return false;
  id.remove_prefix(kPrefix.size());
  return std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

const std::vector<std::string>& registered_finding_ids() {
  static const std::vector<std::string> kIds = [] {
    std::vector<std::string> out(std::begin(kFixedIds), std::end(kFixedIds));
    for (const auto& x : health::xid_catalog()) out.push_back(fmt::format("xid.{}", x.code));
    return out;
  }();
  return kIds;
}

std::optional<std::string> runbook_name(std::string_view id) {
  const auto& ids = registered_finding_ids();
  if (std::find(ids.begin(), ids.end(), id) != ids.end()) return std::string(id);
  if (is_xid_id(id)) return std::string(kUnknownXidRunbook);
  return std::nullopt;
}

std::vector<std::string> runbook_names() {
  std::vector<std::string> out = registered_finding_ids();
  out.emplace_back(kUnknownXidRunbook);
  return out;
}

std::string runbook_link(std::string_view base, std::string_view id) {
  auto name = runbook_name(id);
  if (!name) return {};
  if (base.empty()) base = kSourceRunbooks;
  while (base.size() > 1 && base.back() == '/') base.remove_suffix(1);
  return fmt::format("{}/{}.md", base, *name);
}

void attach_runbooks(std::vector<Finding>& findings, std::string_view base) {
  for (auto& f : findings) f.runbook = runbook_link(base, f.id);
}

std::string runbook_href(std::string_view link) {
  if (link.starts_with("/")) return "file://" + std::string(link);
  return std::string(link);
}

}  // namespace cardiac::doctor
