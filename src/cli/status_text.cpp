// SPDX-License-Identifier: Apache-2.0
// Terminal rendering of `cardiac status`: a GPU table, the problems in words, processes, host.
#include "cli/status_text.h"

#include <algorithm>

#include "core/format.h"
#include "core/time.h"
#include "core/units.h"
#include "nvml/clock_events.h"
#include "nvml/types.h"

namespace cardiac::cli {
namespace {

std::string paint(const TextStyle& s, health::Level l, std::string_view text) {
  if (!s.color) return std::string(text);
  const char* code = l == health::Level::kOk ? "32" : l == health::Level::kWarn ? "33" : "31;1";
  return fmt::format("\033[{}m{}\033[0m", code, text);
}

std::string short_name(std::string name) {
  if (name.starts_with("NVIDIA ")) name.erase(0, 7);
  return name.size() > 22 ? name.substr(0, 21) + "…" : name;
}

template <class T>
std::string opt(const std::optional<T>& v, std::string_view suffix = "") {
  return v ? fmt::format("{}{}", *v, suffix) : "n/a";
}

std::string gib(std::uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

std::string throttle_text(const nvml::GpuReading& g) {
  if (!g.clock_event_reasons) return "n/a";
  std::vector<std::string> names;
  for (const auto& r : nvml::decode_clock_event_reasons(*g.clock_event_reasons)) {
    if (r.bit == nvml::kReasonGpuIdle) continue;
    // HW slowdown always comes with its cause (thermal or power brake) when one is known.
    if (r.bit == nvml::kReasonHwSlowdown &&
        (*g.clock_event_reasons &
         (nvml::kReasonHwThermalSlowdown | nvml::kReasonHwPowerBrakeSlowdown))) {
      continue;
    }
    names.emplace_back(r.brief);
  }
  if (nvml::unknown_clock_event_bits(*g.clock_event_reasons)) names.emplace_back("other");
  if (names.empty()) return *g.clock_event_reasons & nvml::kReasonGpuIdle ? "idle" : "none";
  return fmt::format("{}", fmt::join(names, ","));
}

void render_header(const health::StatusReport& r, const TextStyle& s, std::string& out) {
  std::string host = r.host.system.hostname.value_or("this host");
  std::string driver;
  if (r.nvml.available) {
    driver = fmt::format(
        "driver {}", r.nvml.system.driver_version.empty() ? "n/a" : r.nvml.system.driver_version);
    if (r.nvml.system.cuda_driver_version) {
      int v = *r.nvml.system.cuda_driver_version;
      driver += fmt::format(", CUDA {}.{}", v / 1000, (v % 1000) / 10);
    }
    driver += fmt::format(", {} GPU{}", r.nvml.system.device_count,
                          r.nvml.system.device_count == 1 ? "" : "s");
  } else {
    driver = "NVML unavailable";
  }
  out += fmt::format("{} · {} · {}   {}\n\n", host, format_iso8601(r.taken_at), driver,
                     paint(s, r.overall, health::level_name(r.overall)));
}

void render_gpu_table(const health::StatusReport& r, const TextStyle& s, std::string& out) {
  if (r.gpus.empty()) return;
  out += fmt::format("{:<3} {:<22} {:<12} {:>4} {:>15} {:>5} {:>11} {:>10} {:<9} {:<14} {}\n",
                     "GPU", "NAME", "BUS", "UTIL", "MEMORY GiB", "TEMP", "POWER W", "SM MHz",
                     "PCIE", "THROTTLE", "VERDICT");
  for (const auto& gs : r.gpus) {
    const auto& g = gs.reading;
    std::string mem = g.memory_used && g.memory_total
                          ? fmt::format("{}/{}", gib(*g.memory_used), gib(*g.memory_total))
                          : "n/a";
    std::string power =
        g.power_usage_mw ? fmt::format("{}/{}", *g.power_usage_mw / 1000,
                                       g.power_limit_mw ? std::to_string(*g.power_limit_mw / 1000)
                                                        : std::string("n/a"))
                         : "n/a";
    std::string sm =
        g.clock_sm_mhz ? fmt::format("{}/{}", *g.clock_sm_mhz, opt(g.clock_sm_max_mhz)) : "n/a";
    std::string pcie = g.pcie_gen_current && g.pcie_width_current
                           ? fmt::format("gen{} x{}", *g.pcie_gen_current, *g.pcie_width_current)
                           : "n/a";
    bool ok = g.health == nvml::DeviceHealth::kOk;
    out += fmt::format(
        "{:<3} {:<22} {:<12} {:>4} {:>15} {:>5} {:>11} {:>10} {:<9} {:<14} {}\n", g.index,
        short_name(g.name.empty() ? "—" : g.name), g.pci_bus_id.empty() ? "—" : g.pci_bus_id,
        ok ? opt(g.utilization_gpu, "%") : "", ok ? mem : "", ok ? opt(g.temperature, "C") : "",
        ok ? power : "", ok ? sm : "", ok ? pcie : "", ok ? throttle_text(g) : "",
        paint(s, gs.verdict.level, health::level_name(gs.verdict.level)));
  }
  out += "\n";
}

void render_problems(const health::StatusReport& r, const TextStyle& s, std::string& out) {
  std::vector<std::string> lines;
  auto add = [&](std::string_view who, const health::Verdict& v) {
    for (const auto& reason : v.reasons) {
      if (reason.level == health::Level::kOk) continue;
      lines.push_back(fmt::format(
          "{} {}: {}", who, paint(s, reason.level, health::level_name(reason.level)), reason.text));
    }
  };
  add("NVML", r.inventory);
  for (const auto& gs : r.gpus) {
    add(gs.reading.pci_bus_id.empty()
            ? fmt::format("GPU {}", gs.reading.index)
            : fmt::format("GPU {} ({})", gs.reading.index, gs.reading.pci_bus_id),
        gs.verdict);
  }
  add("Host", r.host_verdict);
  if (lines.empty()) return;
  out += "Problems\n";
  for (const auto& l : lines) out += "  " + l + "\n";
  out += "\n";
}

void render_processes(const health::StatusReport& r, std::string& out) {
  bool header = false;
  // The JOB column only where some process belongs to a job (jobmap).
  bool jobs = false;
  for (const auto& gs : r.gpus) {
    for (const auto& p : gs.reading.processes) jobs = jobs || !p.job.empty();
  }
  for (const auto& gs : r.gpus) {
    for (const auto& p : gs.reading.processes) {
      if (!header) {
        out += fmt::format("{:<3} {:>8} {:<9} {:<24} {:>12}{}\n", "GPU", "PID", "TYPE", "PROCESS",
                           "GPU MEMORY", jobs ? "  JOB" : "");
        header = true;
      }
      std::string job;
      if (jobs) job = p.job.empty() ? "  -" : fmt::format("  {} {}", p.job_source, p.job);
      out += fmt::format("{:<3} {:>8} {:<9} {:<24} {:>12}{}\n", gs.reading.index, p.pid, p.type,
                         p.name.empty() ? "(gone)" : p.name,
                         p.used_memory_bytes ? format_bytes(*p.used_memory_bytes) : "n/a", job);
    }
  }
  if (header) out += "\n";
}

void render_host(const health::StatusReport& r, const TextStyle& s, std::string& out) {
  const auto& h = r.host;
  std::vector<std::string> parts;
  if (r.rates && r.rates->cpu.total) {
    const auto& c = *r.rates->cpu.total;
    parts.push_back(fmt::format("cpu {:.0f}% (iowait {:.0f}%)", c.busy, c.iowait.value_or(0)));
  }
  if (h.load)
    parts.push_back(
        fmt::format("load {:.2f} {:.2f} {:.2f}", h.load->load1, h.load->load5, h.load->load15));
  if (h.memory && h.memory->available) {
    parts.push_back(fmt::format("mem {} free of {}", format_bytes(*h.memory->available),
                                format_bytes(h.memory->total)));
  }
  for (const auto& fs : h.filesystems) {
    if (auto used = host::used_percent(fs)) {
      parts.push_back(fmt::format("{} {:.0f}%", fs.mount_point, *used));
    }
  }
  if (h.system.uptime_s)
    parts.push_back("up " + format_duration(static_cast<DurationNs>(*h.system.uptime_s * 1e9)));
  if (h.system.kernel) parts.push_back("kernel " + *h.system.kernel);
  out += fmt::format("Host {}  {}\n",
                     paint(s, r.host_verdict.level, health::level_name(r.host_verdict.level)),
                     fmt::join(parts, " · "));
}

}  // namespace

std::string render_status_text(const health::StatusReport& report, const TextStyle& style) {
  std::string out;
  render_header(report, style, out);
  if (!report.nvml.available) {
    out += fmt::format("NVML: {}\n\n", report.nvml.error);
  }
  render_gpu_table(report, style, out);
  render_problems(report, style, out);
  render_processes(report, out);
  render_host(report, style, out);
  return out;
}

}  // namespace cardiac::cli
