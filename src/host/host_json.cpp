// SPDX-License-Identifier: Apache-2.0
// HostSnapshot/HostRates -> JSON.
#include "host/host_json.h"

#include <cmath>

#include "core/format.h"
#include "core/time.h"

namespace cardiac::host {
namespace {

using nlohmann::json;

// Dividing by a power of ten (rather than multiplying by 0.1) yields the double nearest to
// the decimal, so 16.6 prints as 16.6 and not 16.600000000000001.
double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}
double pct(double v) {
  return round_to(v, 1);
}

template <class T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
void put_pct(json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = pct(*v);
}

// nlohmann's dump() throws on invalid UTF-8, and comm, cmdline, mount points and error
// excerpts come from the machine unchecked, so each string is made valid first (U+FFFD for
// every byte that does not start a well-formed sequence).
std::string utf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xe  ? 3
                      : (c >> 3) == 0x1e ? 4
                                         : 0;
    bool ok = len > 0 && i + len <= in.size() && !(len == 2 && c < 0xc2) && !(c > 0xf4);
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(in[i + k]) & 0xc0) == 0x80;
    }
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::optional<std::string> utf8_opt(const std::optional<std::string>& in) {
  if (!in) return std::nullopt;
  return utf8(*in);
}

std::string hex(std::uint32_t v, int digits) {
  return fmt::format("0x{:0{}x}", v, digits);
}

json usage_json(const CpuUsage& u) {
  json j = {{"user_pct", pct(u.user)},
            {"system_pct", pct(u.system)},
            {"idle_pct", pct(u.idle)},
            {"busy_pct", pct(u.busy)}};
  put_pct(j, "iowait_pct", u.iowait);
  put_pct(j, "steal_pct", u.steal);
  return j;
}

json cpu_json(const CpuStat& c, const HostRates* rates) {
  json j = {{"cores", c.core_count()}};
  put(j, "procs_running", c.procs_running);
  put(j, "procs_blocked", c.procs_blocked);
  if (rates == nullptr) return j;
  if (rates->cpu.total) j["usage"] = usage_json(*rates->cpu.total);
  json cores = json::array();
  for (const CoreUsage& core : rates->cpu.cores) {
    json one = usage_json(core.usage);
    one["cpu"] = core.cpu;
    cores.push_back(std::move(one));
  }
  if (!cores.empty()) j["per_core"] = std::move(cores);
  return j;
}

json memory_json(const MemInfo& m) {
  json j = {{"total_bytes", m.total}};
  put(j, "free_bytes", m.free);
  put(j, "available_bytes", m.available);
  put(j, "buffers_bytes", m.buffers);
  put(j, "cached_bytes", m.cached);
  put(j, "swap_total_bytes", m.swap_total);
  put(j, "swap_free_bytes", m.swap_free);
  return j;
}

json pressure_json(const Pressure& p) {
  json j = json::object();
  auto line = [](const PressureLine& l) {
    return json{{"avg10", pct(l.avg10)},
                {"avg60", pct(l.avg60)},
                {"avg300", pct(l.avg300)},
                {"total_us", l.total_us}};
  };
  auto stat = [&](const char* key, const std::optional<PressureStat>& s) {
    if (!s) return;
    json one = json::object();
    if (s->some) one["some"] = line(*s->some);
    if (s->full) one["full"] = line(*s->full);
    j[key] = std::move(one);
  };
  stat("cpu", p.cpu);
  stat("memory", p.memory);
  stat("io", p.io);
  return j;
}

json filesystem_json(const FilesystemUsage& f) {
  json j = {{"mount_point", utf8(f.mount_point)},
            {"device", utf8(f.device)},
            {"fs_type", utf8(f.fs_type)},
            {"network", f.network}};
  put(j, "total_bytes", f.total);
  put(j, "free_bytes", f.free);
  put(j, "available_bytes", f.available);
  if (auto used = used_percent(f)) {
    j["used_pct"] = pct(*used);
  }
  return j;
}

json disk_json(const DiskStat& d, const DiskRates* r) {
  json j = {{"name", utf8(d.name)},
            {"reads", d.reads},
            {"writes", d.writes},
            {"read_bytes", d.read_sectors * 512},
            {"write_bytes", d.write_sectors * 512},
            {"read_ms", d.read_ms},
            {"write_ms", d.write_ms},
            {"io_ms", d.io_ms},
            {"weighted_ms", d.weighted_ms},
            {"in_flight", d.in_flight}};
  if (r == nullptr) return j;
  j["read_bytes_per_s"] = std::llround(r->read_bytes_per_s);
  j["write_bytes_per_s"] = std::llround(r->write_bytes_per_s);
  j["read_iops"] = round_to(r->read_iops, 1);
  j["write_iops"] = round_to(r->write_iops, 1);
  if (r->await_ms) j["await_ms"] = round_to(*r->await_ms, 2);
  j["util_pct"] = pct(r->util_percent);
  return j;
}

json nic_json(const NetDevice& n, const NetRates* r) {
  json j = {{"name", utf8(n.name)},       {"rx_bytes", n.rx_bytes},   {"rx_packets", n.rx_packets},
            {"rx_errors", n.rx_errors},   {"rx_drops", n.rx_drops},   {"tx_bytes", n.tx_bytes},
            {"tx_packets", n.tx_packets}, {"tx_errors", n.tx_errors}, {"tx_drops", n.tx_drops}};
  put(j, "operstate", utf8_opt(n.operstate));
  put(j, "speed_mbps", n.speed_mbps);
  if (r == nullptr) return j;
  j["rx_bytes_per_s"] = std::llround(r->rx_bytes_per_s);
  j["tx_bytes_per_s"] = std::llround(r->tx_bytes_per_s);
  put_pct(j, "rx_util_pct", r->rx_util_percent);
  put_pct(j, "tx_util_pct", r->tx_util_percent);
  j["rx_errors_delta"] = r->rx_errors;
  j["tx_errors_delta"] = r->tx_errors;
  j["rx_drops_delta"] = r->rx_drops;
  j["tx_drops_delta"] = r->tx_drops;
  return j;
}

json pci_json(const PciScan& p) {
  json gpus = json::array();
  for (const PciDevice& d : p.gpus) {
    json g = {{"bus_id", utf8(d.bus_id)},
              {"vendor_id", hex(d.vendor, 4)},
              {"device_id", hex(d.device, 4)},
              {"class", hex(d.class_code, 6)}};
    put(g, "driver", utf8_opt(d.driver));
    put(g, "current_link_gts", d.current_link_gts);
    put(g, "max_link_gts", d.max_link_gts);
    if (d.current_link_gts) put(g, "current_link_gen", pcie_generation(*d.current_link_gts));
    if (d.max_link_gts) put(g, "max_link_gen", pcie_generation(*d.max_link_gts));
    put(g, "current_link_width", d.current_link_width);
    put(g, "max_link_width", d.max_link_width);
    put(g, "numa_node", d.numa_node);
    gpus.push_back(std::move(g));
  }
  return json{{"nvidia_gpus", std::move(gpus)},
              {"other_nvidia_functions", p.other_nvidia_functions}};
}

json system_json(const SystemInfo& s) {
  json j = {{"nvidia_module_loaded", s.nvidia_module_loaded}};
  put(j, "hostname", utf8_opt(s.hostname));
  put(j, "kernel", utf8_opt(s.kernel));
  if (s.uptime_s) j["uptime_s"] = round_to(*s.uptime_s, 2);
  put(j, "nvidia_driver_version", utf8_opt(s.nvidia_driver_version));
  return j;
}

template <class Rate>
const Rate* find_rate(const std::vector<Rate>* rates, const std::string& name) {
  if (rates == nullptr) return nullptr;
  for (const Rate& r : *rates) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

nlohmann::json to_json(const HostSnapshot& s, const HostRates* rates) {
  json j = {{"taken_at", format_iso8601(s.taken_at)}, {"taken_at_ns", s.taken_at}};
  if (rates != nullptr) j["interval_s"] = round_to(rates->interval_s, 3);
  j["system"] = system_json(s.system);
  if (s.cpu) j["cpu"] = cpu_json(*s.cpu, rates);
  if (s.load) {
    j["load"] = {{"load1", s.load->load1},
                 {"load5", s.load->load5},
                 {"load15", s.load->load15},
                 {"tasks_running", s.load->running},
                 {"tasks_total", s.load->total}};
  }
  if (s.memory) j["memory"] = memory_json(*s.memory);
  if (json p = pressure_json(s.pressure); !p.empty()) j["pressure"] = std::move(p);
  j["filesystems"] = json::array();
  for (const auto& f : s.filesystems) j["filesystems"].push_back(filesystem_json(f));
  j["disks"] = json::array();
  for (const auto& d : s.disks) {
    j["disks"].push_back(disk_json(d, find_rate(rates ? &rates->disks : nullptr, d.name)));
  }
  j["nics"] = json::array();
  for (const auto& n : s.nics) {
    j["nics"].push_back(nic_json(n, find_rate(rates ? &rates->nics : nullptr, n.name)));
  }
  j["dstate_processes"] = json::array();
  for (const auto& p : s.dstate_processes) {
    json one = {{"pid", p.pid}, {"comm", utf8(p.comm)}, {"cmdline", utf8(p.cmdline)}};
    put(one, "wchan", utf8_opt(p.wchan));
    j["dstate_processes"].push_back(std::move(one));
  }
  if (s.pci) j["pci"] = pci_json(*s.pci);
  j["errors"] = json::array();
  for (const auto& e : s.errors) j["errors"].push_back(utf8(e));
  if (s.timed_out) j["timed_out"] = true;
  return j;
}

}  // namespace cardiac::host
