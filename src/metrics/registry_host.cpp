// SPDX-License-Identifier: Apache-2.0
// Registry rows for the host, the report's verdicts and the agent itself.
#include "metrics/registry.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {
namespace {

using health::StatusReport;
using MT = MetricType;

template <class T>
std::optional<double> opt(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

// CPU usage exists only once two host snapshots with ticks between them are known.
const host::CpuUsage* cpu_usage(const StatusReport& r) {
  if (!r.rates || !r.rates->cpu.total) return nullptr;
  return &*r.rates->cpu.total;
}

constexpr Scale kPercentToRatio{1, 100};

}  // namespace

std::vector<MetricDef> host_metric_rows() {
  return {
      // --- Verdicts of the whole report.
      {.name = "cardiac_host_health",
       .help = "Verdict of the host (memory, disks, CPU, D-state processes, NICs): 0 OK, "
               "1 WARN, 2 FAIL.",
       .source = "health::judge_host",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return static_cast<double>(r.host_verdict.level);
       }},
      {.name = "cardiac_inventory_health",
       .help = "Verdict of the GPU inventory (NVML usable, NVML vs the PCI bus and the kernel "
               "module): 0 OK, 1 WARN, 2 FAIL.",
       .source = "health::judge_inventory",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return static_cast<double>(r.inventory.level);
       }},
      {.name = "cardiac_nvml_available",
       .help = "1 when NVML was loaded and initialised in the latest sample.",
       .source = "GpuSnapshot.available",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.nvml.available ? 1.0 : 0.0;
       }},
      // --- CPU and load.
      {.name = "cardiac_host_cpu_busy_ratio",
       .unit = "ratio",
       .help = "Fraction of CPU time spent working (not idle, not waiting for I/O) between the "
               "last two samples.",
       .source = "HostRates.cpu.total.busy (%)",
       .scale = kPercentToRatio,
       .report = [](const StatusReport& r) -> std::optional<double> {
         const auto* u = cpu_usage(r);
         return u ? std::optional<double>(u->busy) : std::nullopt;
       }},
      {.name = "cardiac_host_cpu_iowait_ratio",
       .unit = "ratio",
       .help = "Fraction of CPU time idle while waiting for I/O between the last two samples.",
       .source = "HostRates.cpu.total.iowait (%)",
       .scale = kPercentToRatio,
       .report = [](const StatusReport& r) -> std::optional<double> {
         const auto* u = cpu_usage(r);
         return u ? u->iowait : std::nullopt;
       }},
      {.name = "cardiac_host_cpu_steal_ratio",
       .unit = "ratio",
       .help = "Fraction of CPU time taken by the hypervisor between the last two samples.",
       .source = "HostRates.cpu.total.steal (%)",
       .scale = kPercentToRatio,
       .report = [](const StatusReport& r) -> std::optional<double> {
         const auto* u = cpu_usage(r);
         return u ? u->steal : std::nullopt;
       }},
      {.name = "cardiac_host_cpus",
       .help = "Online CPUs.",
       .source = "CpuStat.cores (/proc/stat)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         if (!r.host.cpu) return std::nullopt;
         return static_cast<double>(r.host.cpu->core_count());
       }},
      {.name = "cardiac_host_load1",
       .help = "Load average over 1 minute.",
       .source = "LoadAvg.load1 (/proc/loadavg)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.load ? std::optional<double>(r.host.load->load1) : std::nullopt;
       }},
      {.name = "cardiac_host_load5",
       .help = "Load average over 5 minutes.",
       .source = "LoadAvg.load5 (/proc/loadavg)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.load ? std::optional<double>(r.host.load->load5) : std::nullopt;
       }},
      {.name = "cardiac_host_load15",
       .help = "Load average over 15 minutes.",
       .source = "LoadAvg.load15 (/proc/loadavg)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.load ? std::optional<double>(r.host.load->load15) : std::nullopt;
       }},
      {.name = "cardiac_host_dstate_processes",
       .help = "Tasks in uninterruptible sleep (state D); many of them stuck in the NVIDIA "
               "driver is the hung-driver signature.",
       .source = "HostSnapshot.dstate_processes",
       .report = [](const StatusReport& r) -> std::optional<double> {
         // An empty list also results from a timed-out collection or an unreadable /proc
         // (then /proc/stat is missing too); that says nothing, so no series.
         if (r.host.timed_out || !r.host.cpu) return std::nullopt;
         return static_cast<double>(r.host.dstate_processes.size());
       }},
      // --- Memory.
      {.name = "cardiac_host_memory_total_bytes",
       .unit = "bytes",
       .help = "Physical memory.",
       .source = "MemInfo.total (/proc/meminfo)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         if (!r.host.memory) return std::nullopt;
         return static_cast<double>(r.host.memory->total);
       }},
      {.name = "cardiac_host_memory_available_bytes",
       .unit = "bytes",
       .help = "Memory available for new work without swapping (MemAvailable).",
       .source = "MemInfo.available (/proc/meminfo)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.memory ? opt(r.host.memory->available) : std::nullopt;
       }},
      {.name = "cardiac_host_memory_free_bytes",
       .unit = "bytes",
       .help = "Memory not used at all (MemFree).",
       .source = "MemInfo.free (/proc/meminfo)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.memory ? opt(r.host.memory->free) : std::nullopt;
       }},
      {.name = "cardiac_host_swap_total_bytes",
       .unit = "bytes",
       .help = "Swap space.",
       .source = "MemInfo.swap_total (/proc/meminfo)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.memory ? opt(r.host.memory->swap_total) : std::nullopt;
       }},
      {.name = "cardiac_host_swap_free_bytes",
       .unit = "bytes",
       .help = "Swap space not in use.",
       .source = "MemInfo.swap_free (/proc/meminfo)",
       .report = [](const StatusReport& r) -> std::optional<double> {
         return r.host.memory ? opt(r.host.memory->swap_free) : std::nullopt;
       }},
      // --- File systems (data mounts only, see host/mounts.h).
      {.name = "cardiac_host_filesystem_size_bytes",
       .unit = "bytes",
       .help = "Size of the file system.",
       .scope = Scope::kFilesystem,
       .source = "FilesystemUsage.total (statvfs)",
       .fs = [](const host::FilesystemUsage& f) { return opt(f.total); }},
      {.name = "cardiac_host_filesystem_free_bytes",
       .unit = "bytes",
       .help = "Free space, including blocks reserved for root.",
       .scope = Scope::kFilesystem,
       .source = "FilesystemUsage.free (statvfs)",
       .fs = [](const host::FilesystemUsage& f) { return opt(f.free); }},
      {.name = "cardiac_host_filesystem_avail_bytes",
       .unit = "bytes",
       .help = "Space available to unprivileged users.",
       .scope = Scope::kFilesystem,
       .source = "FilesystemUsage.available (statvfs)",
       .fs = [](const host::FilesystemUsage& f) { return opt(f.available); }},
      {.name = "cardiac_host_filesystem_used_bytes",
       .unit = "bytes",
       .help = "Space in use (size minus free).",
       .scope = Scope::kFilesystem,
       .source = "FilesystemUsage.total - free (statvfs)",
       .fs = [](const host::FilesystemUsage& f) -> std::optional<double> {
         if (!f.total || !f.free || *f.free > *f.total) return std::nullopt;
         return static_cast<double>(*f.total - *f.free);
       }},
      // --- Network interfaces.
      {.name = "cardiac_host_network_receive_bytes_total",
       .type = MT::kCounter,
       .unit = "bytes",
       .help = "Bytes received.",
       .scope = Scope::kNic,
       .source = "NetDevice.rx_bytes (/proc/net/dev)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         return static_cast<double>(n.rx_bytes);
       }},
      {.name = "cardiac_host_network_transmit_bytes_total",
       .type = MT::kCounter,
       .unit = "bytes",
       .help = "Bytes sent.",
       .scope = Scope::kNic,
       .source = "NetDevice.tx_bytes (/proc/net/dev)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         return static_cast<double>(n.tx_bytes);
       }},
      {.name = "cardiac_host_network_receive_errors_total",
       .type = MT::kCounter,
       .help = "Receive errors.",
       .scope = Scope::kNic,
       .source = "NetDevice.rx_errors (/proc/net/dev)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         return static_cast<double>(n.rx_errors);
       }},
      {.name = "cardiac_host_network_transmit_errors_total",
       .type = MT::kCounter,
       .help = "Transmit errors.",
       .scope = Scope::kNic,
       .source = "NetDevice.tx_errors (/proc/net/dev)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         return static_cast<double>(n.tx_errors);
       }},
      {.name = "cardiac_host_network_receive_drops_total",
       .type = MT::kCounter,
       .help = "Received packets dropped.",
       .scope = Scope::kNic,
       .source = "NetDevice.rx_drops (/proc/net/dev)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         return static_cast<double>(n.rx_drops);
       }},
      {.name = "cardiac_host_network_transmit_drops_total",
       .type = MT::kCounter,
       .help = "Packets dropped on send.",
       .scope = Scope::kNic,
       .source = "NetDevice.tx_drops (/proc/net/dev)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         return static_cast<double>(n.tx_drops);
       }},
      {.name = "cardiac_host_network_speed_bytes",
       .unit = "bytes/s",
       .help = "Link speed in bytes per second; absent while the link is down or unknown.",
       .scope = Scope::kNic,
       .source = "NetDevice.speed_mbps (Mb/s, /sys/class/net)",
       .scale = {1e6, 8},
       .nic = [](const host::NetDevice& n) { return opt(n.speed_mbps); }},
      {.name = "cardiac_host_network_up",
       .help = "1 when the interface's operstate is \"up\".",
       .scope = Scope::kNic,
       .source = "NetDevice.operstate (/sys/class/net)",
       .nic = [](const host::NetDevice& n) -> std::optional<double> {
         if (!n.operstate) return std::nullopt;
         return *n.operstate == "up" ? 1.0 : 0.0;
       }},
      // --- The agent itself.
      {.name = "cardiac_agent_sample_duration_seconds",
       .unit = "seconds",
       .help = "Wall time the latest sample took.",
       .scope = Scope::kAgent,
       .source = "AgentMetrics.sample_duration_seconds",
       .agent = [](const AgentMetrics& a) { return a.sample_duration_seconds; }},
      {.name = "cardiac_agent_samples_total",
       .type = MT::kCounter,
       .help = "Samples taken since the agent started.",
       .scope = Scope::kAgent,
       .source = "AgentMetrics.samples_total",
       .agent = [](const AgentMetrics& a) { return opt(a.samples_total); }},
      {.name = "cardiac_agent_missed_samples_total",
       .type = MT::kCounter,
       .help = "Sample ticks skipped because the previous sample was still running.",
       .scope = Scope::kAgent,
       .source = "AgentMetrics.missed_samples_total",
       .agent = [](const AgentMetrics& a) { return opt(a.missed_samples_total); }},
      {.name = "cardiac_agent_worker_restarts_total",
       .type = MT::kCounter,
       .help = "Times the NVML worker process was restarted (hung or crashed).",
       .scope = Scope::kAgent,
       .source = "AgentMetrics.worker_restarts_total",
       .agent = [](const AgentMetrics& a) { return opt(a.worker_restarts_total); }},
      {.name = "cardiac_agent_heap_in_use_bytes",
       .unit = "bytes",
       .help = "Bytes in live blocks of the agent process's allocator (SQLite's included), read "
               "every 10 s: a value that keeps rising across hours is a leak. Absent when "
               "the allocator is not glibc's.",
       .scope = Scope::kAgent,
       .source = "glibc mallinfo2: uordblks + hblkhd",
       .agent = [](const AgentMetrics& a) { return a.heap_in_use_bytes; }},
      {.name = "cardiac_agent_heap_free_bytes",
       .unit = "bytes",
       .help = "Bytes the agent process's allocator holds free in its heaps, not given back to "
               "the system, read every 10 s.",
       .scope = Scope::kAgent,
       .source = "glibc mallinfo2: fordblks",
       .agent = [](const AgentMetrics& a) { return a.heap_free_bytes; }},
      {.name = "cardiac_agent_sqlite_memory_bytes",
       .unit = "bytes",
       .help = "Bytes SQLite has allocated in the agent process (page caches, statements, "
               "schema), read every 10 s.",
       .scope = Scope::kAgent,
       .source = "sqlite3_memory_used()",
       .agent = [](const AgentMetrics& a) { return a.sqlite_memory_bytes; }},
      {.name = "cardiac_agent_last_sample_timestamp_seconds",
       .unit = "seconds",
       .help = "Unix time of the latest completed sample.",
       .scope = Scope::kAgent,
       .source = "AgentMetrics.last_sample_timestamp_seconds",
       .agent = [](const AgentMetrics& a) { return a.last_sample_timestamp_seconds; }},
      {.name = "cardiac_kmsg_up",
       .help = "1 while the configured kernel log ([kmsg] source) is read, 0 while it cannot be "
               "(missing file, no permission); absent when the kernel log is not watched.",
       .scope = Scope::kAgent,
       .source = "AgentMetrics.kmsg_up",
       .agent = [](const AgentMetrics& a) { return a.kmsg_up; }},
  };
}

}  // namespace cardiac::metrics
