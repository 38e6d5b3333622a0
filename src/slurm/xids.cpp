// SPDX-License-Identifier: Apache-2.0
#include "slurm/xids.h"

#include <cctype>
#include <cstdint>
#include <map>

#include "core/format.h"
#include "health/faults.h"

namespace cardiac::slurm {
namespace {

// A GPU index: a non-negative integer (signed or not, as the JSON was built or parsed).
std::optional<unsigned> index_in(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 ||
      it->get<std::int64_t>() > 1023) {
    return std::nullopt;
  }
  return static_cast<unsigned>(it->get<std::int64_t>());
}

}  // namespace

std::string bus_key(std::string bus) {
  for (auto& ch : bus) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto colon = bus.find(':');
  if (colon != std::string::npos && bus.find(':', colon + 1) != std::string::npos) {
    bus = bus.substr(colon + 1);
  }
  return bus;
}

std::vector<JobXid> job_xids(const nlohmann::json& events, const nlohmann::json& status,
                             TimeNs start, TimeNs end,
                             const std::optional<std::set<unsigned>>& gpus,
                             const std::string& job) {
  std::map<std::string, unsigned> index_of;
  if (status.is_object() && status.contains("gpus") && status["gpus"].is_array()) {
    for (const auto& g : status["gpus"]) {
      auto index = g.is_object() ? index_in(g, "index") : std::nullopt;
      if (index && g.contains("pci_bus_id") && g["pci_bus_id"].is_string()) {
        index_of[bus_key(g["pci_bus_id"].get<std::string>())] = *index;
      }
    }
  }
  std::vector<JobXid> out;
  if (!events.is_array()) return out;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("kind", "") != "xid" || !e.contains("xid") ||
        !e["xid"].is_number_integer() || !e.contains("time_ns") ||
        !e["time_ns"].is_number_integer()) {
      continue;
    }
    JobXid x;
    x.time = e["time_ns"].get<TimeNs>();
    if (x.time < start - kNsPerSec || x.time > end + kNsPerSec) continue;
    if (e.contains("pci_bus_id") && e["pci_bus_id"].is_string()) {
      x.pci_bus_id = e["pci_bus_id"].get<std::string>();
    }
    if (auto gpu = index_in(e, "gpu")) {
      x.gpu = gpu;
    } else if (auto it = index_of.find(bus_key(x.pci_bus_id)); it != index_of.end()) {
      x.gpu = it->second;
    }
    if (gpus && x.gpu && gpus->count(*x.gpu) == 0) continue;  // another job's GPU
    x.xid = e["xid"].get<int>();
    const auto info = health::lookup_xid(x.xid);
    x.severity = info.severity;
    std::string where;
    if (x.gpu) {
      where = x.pci_bus_id.empty() ? fmt::format("GPU {}", *x.gpu)
                                   : fmt::format("GPU {} ({})", *x.gpu, x.pci_bus_id);
    } else {
      where = x.pci_bus_id.empty() ? std::string("a GPU") : x.pci_bus_id;
    }
    x.text = fmt::format("job {}: {} Xid {} {}", job, where, x.xid, info.meaning);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace cardiac::slurm
