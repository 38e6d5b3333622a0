// SPDX-License-Identifier: Apache-2.0
// collect_host: every reader once, partial failures recorded instead of propagated.
#include "host/host.h"

namespace cardiac::host {
namespace {

// A missing source is the normal absent case (old kernel, container, no GPU), not an error.
template <class T>
std::optional<T> keep(Result<T> r, std::vector<std::string>& errors) {
  if (r) return std::move(*r);
  if (r.error().code != ErrorCode::kNotFound) errors.push_back(r.error().what());
  return std::nullopt;
}

}  // namespace

HostSnapshot collect_host(const FileSystem& fs, TimeNs now) {
  HostSnapshot s;
  s.taken_at = now;
  auto& errs = s.errors;
  s.cpu = keep(collect_cpu_stat(fs), errs);
  s.load = keep(collect_loadavg(fs), errs);
  s.memory = keep(collect_meminfo(fs), errs);
  s.pressure = keep(collect_pressure(fs), errs).value_or(Pressure{});
  s.filesystems = keep(collect_filesystems(fs), errs).value_or(std::vector<FilesystemUsage>{});
  s.disks = keep(collect_diskstats(fs), errs).value_or(std::vector<DiskStat>{});
  s.nics = keep(collect_net_devices(fs), errs).value_or(std::vector<NetDevice>{});
  s.dstate_processes =
      keep(collect_dstate_processes(fs), errs).value_or(std::vector<DStateProcess>{});
  s.system = collect_system_info(fs, &errs);
  s.pci = keep(collect_nvidia_pci(fs), errs);
  return s;
}

HostRates compute_rates(const HostSnapshot& prev, const HostSnapshot& cur) {
  HostRates r;
  r.interval_s = static_cast<double>(cur.taken_at - prev.taken_at) / kNsPerSec;
  if (prev.cpu && cur.cpu) r.cpu = compute_cpu_usage(*prev.cpu, *cur.cpu);
  r.disks = compute_disk_rates(prev.disks, cur.disks, r.interval_s);
  r.nics = compute_net_rates(prev.nics, cur.nics, r.interval_s);
  return r;
}

}  // namespace cardiac::host
