// SPDX-License-Identifier: Apache-2.0
// Building and serialising the status report.
#include "health/report.h"

#include <set>

#include "core/format.h"
#include "core/time.h"
#include "host/host_json.h"
#include "host/processes.h"
#include "jobmap/jobmap.h"
#include "nvml/clock_events.h"
#include "nvml/gpu_json.h"
#include "nvml/pci.h"

namespace cardiac::health {
namespace {

// A lost GPU no longer tells NVML its bus id, yet the card usually still sits on the PCI bus.
// When exactly one GPU lacks its id and exactly one NVIDIA GPU on the bus is unclaimed, they
// are the same card: name its slot, which is what the person at the rack needs.
void fill_missing_bus_id(std::vector<GpuStatus>& gpus, const host::HostSnapshot& host) {
  if (!host.pci) return;
  GpuStatus* missing = nullptr;
  std::set<std::string> claimed;
  for (auto& g : gpus) {
    if (g.reading.pci_bus_id.empty()) {
      if (missing) return;
      missing = &g;
    } else {
      claimed.insert(g.reading.pci_bus_id);
    }
  }
  if (!missing) return;
  std::vector<std::string> unclaimed;
  for (const auto& dev : host.pci->gpus) {
    if (host::passed_through_to_vm(dev)) continue;  // a VM's, not ours
    std::string id = nvml::normalize_pci_bus_id(dev.bus_id);
    if (!claimed.count(id)) unclaimed.push_back(id);
  }
  if (unclaimed.size() != 1) return;
  missing->reading.pci_bus_id = unclaimed.front();
  missing->bus_id_from_sysfs = true;
}

}  // namespace

void name_gpu_processes(const FileSystem& fs, nvml::GpuSnapshot& snap) {
  for (auto& g : snap.gpus) {
    for (auto& p : g.processes) {
      if (auto name = host::read_process_name(fs, p.pid)) p.name = *name;
    }
  }
  jobmap::attribute_jobs(fs, snap);
}

StatusReport build_report(nvml::GpuSnapshot gpus, host::HostSnapshot host,
                          const host::HostRates* rates) {
  StatusReport r;
  r.taken_at = gpus.taken_at;
  r.inventory = judge_inventory(gpus, host);
  r.overall = r.inventory.level;
  for (auto& g : gpus.gpus) {
    GpuStatus s{std::move(g), {}};
    s.verdict = judge_gpu(s.reading);
    r.overall = std::max(r.overall, s.verdict.level);
    r.gpus.push_back(std::move(s));
  }
  gpus.gpus.clear();
  fill_missing_bus_id(r.gpus, host);
  r.nvml = std::move(gpus);
  if (rates) r.rates = *rates;
  r.host_verdict = judge_host(host, rates);
  r.overall = std::max(r.overall, r.host_verdict.level);
  r.host = std::move(host);
  return r;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& reason : v.reasons) {
    reasons.push_back(
        {{"level", level_name(reason.level)}, {"code", reason.code}, {"text", reason.text}});
  }
  return {{"verdict", level_name(v.level)}, {"reasons", std::move(reasons)}};
}

nlohmann::json to_json(const StatusReport& r) {
  nlohmann::json j;
  j["schema"] = "cardiac.status/v1";
  j["taken_at"] = format_iso8601(r.taken_at);
  j["verdict"] = level_name(r.overall);
  nlohmann::json nv{{"available", r.nvml.available}};
  if (!r.nvml.available) {
    nv["error_kind"] = r.nvml.error_kind;
    nv["error"] = r.nvml.error;
  } else {
    nv.update(nvml::to_json(r.nvml.system));
  }
  nv["sample_duration_us"] = r.nvml.duration_us;
  j["nvml"] = std::move(nv);
  j["inventory"] = to_json(r.inventory);
  auto& gpus = j["gpus"] = nlohmann::json::array();
  for (const auto& g : r.gpus) {
    nlohmann::json gj = nvml::to_json(g.reading);
    gj.update(to_json(g.verdict));
    if (g.bus_id_from_sysfs) gj["pci_bus_id_source"] = "sysfs";
    if (g.reading.clock_event_reasons) {
      auto& names = gj["clock_event_reason_names"] = nlohmann::json::array();
      for (const auto& reason : nvml::decode_clock_event_reasons(*g.reading.clock_event_reasons)) {
        names.push_back(reason.name);
      }
      // Bits from a newer driver than this build knows stay visible instead of vanishing.
      if (auto unknown = nvml::unknown_clock_event_bits(*g.reading.clock_event_reasons)) {
        names.push_back(fmt::format("unknown_0x{:x}", unknown));
      }
    }
    gpus.push_back(std::move(gj));
  }
  nlohmann::json hj = host::to_json(r.host, r.rates ? &*r.rates : nullptr);
  hj.update(to_json(r.host_verdict));
  j["host"] = std::move(hj);
  return j;
}

}  // namespace cardiac::health
