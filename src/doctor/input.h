// SPDX-License-Identifier: Apache-2.0
// Everything the checks look at, gathered once (live or from captured data) so that every
// check is a pure function of its input and tests can build one by hand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "core/clock.h"
#include "doctor/security_facts.h"
#include "host/host.h"
#include "kmsg/event.h"
#include "netproc/traffic.h"
#include "nvml/gpu.h"
#include "platform/fs.h"
#include "serving/engine_metrics.h"

namespace cardiac::doctor {

// One thread of a process that holds a GPU, with its CPU use over the window.
struct ThreadActivity {
  std::int64_t tid = 0;
  std::string comm{};
  char state = '?';
  std::optional<std::string> wchan{};
  double cpu_percent = 0;  // of one core
};

// A process that holds a GPU (from NVML's process lists) and what it did over the window.
struct ProcessActivity {
  std::uint32_t pid = 0;
  std::string comm{};
  bool exists = true;                     // false: NVML lists it but /proc has no such pid
  double cpu_percent = 0;                 // all threads, of one core
  std::vector<ThreadActivity> threads{};  // busiest first
  std::vector<unsigned> gpus{};           // GPU indices it holds
};

// One network target probed, near ("gateway", "loopback") or far ("target").
struct ProbeResult {
  std::string target{};   // as configured: "10.0.0.1", "tcp://host:443", "udp://127.0.0.1:7"
  std::string role{};     // "gateway", "target"
  std::string method{};   // "icmp", "tcp", "udp"
  std::string address{};  // resolved address probed
  unsigned sent = 0;
  unsigned received = 0;
  std::vector<double> rtt_ms{};    // one per answered probe, in order
  std::string error{};             // resolution or socket failure; probes not sent then
  std::optional<double> dns_ms{};  // name resolution time when the target was a name
  // Of `received`, answers that were a refusal (a TCP reset): the host and the path answered,
  // but nothing listens on the port.
  unsigned refused = 0;
  [[nodiscard]] double loss_percent() const;
  [[nodiscard]] std::optional<double> mean_ms() const;
  [[nodiscard]] std::optional<double> jitter_ms() const;  // mean |rtt[i] - rtt[i-1]|
};

// History from an agent store (`--db`), per GPU: a few series worth charting and judging.
struct GpuHistory {
  unsigned gpu = 0;
  std::string uuid{};
  // metric name (as stored: "temperature", "utilization_gpu", …) → points.
  std::vector<std::pair<std::string, std::vector<std::pair<TimeNs, double>>>> series{};
};

// A boot seen in the kernel log (a "Linux version" line or a monotonic clock that went back),
// so an Xid that comes back after a reboot can be told apart from a repeat within one boot.
struct Boot {
  std::size_t first_event = 0;   // index into events of the first event after this boot began
  std::optional<TimeNs> time{};  // when known
};

// How reading the kernel log went: a log the doctor could not read is never a clean bill.
struct KernelLogRead {
  std::size_t lines = 0;      // non-empty lines
  std::size_t log_lines = 0;  // of which looked like a log line (kernel_log.h)
  std::size_t long_lines = 0;
  std::size_t first_long_line = 0;   // line number of the first, 1-based
  std::string compression{};         // "gzip", "xz", "zstd" or ""
  std::vector<std::string> notes{};  // what was left out, and why
  bool binary = false;               // binary data: nothing was parsed (kernel_log.h)
  std::size_t bytes = 0;             // of binary data, decompressed
};

// One GPU process's memory over time (the serving view): from the agent's book
// (`gpu-processes.json` beside the store named by --db) and from the doctor's own samples.
struct ProcessVram {
  unsigned gpu = 0;
  std::uint32_t pid = 0;
  std::string name{};
  std::string cmdline{};
  std::vector<std::pair<TimeNs, double>> points{};  // bytes, oldest first
  double gpu_total_bytes = 0;
  double gpu_free_bytes = 0;  // at the last point
  std::string source{};       // "agent" or "nvml"
};

// An inference engine's /metrics read during the run: at the start of the window and, when
// the window is long enough for a second read, at its end (preemptions rising).
struct EngineRead {
  serving::EngineStats first{};
  std::optional<serving::EngineStats> last{};
  [[nodiscard]] const serving::EngineStats& latest() const { return last ? *last : first; }
};

// A port or a range of ports that may listen ([security] allowed_listen_ports).
struct ListenPortRule {
  std::string proto{};  // "tcp", "udp", or "" for both
  unsigned low = 0;
  unsigned high = 0;  // equal to low for one port
  bool operator==(const ListenPortRule&) const = default;
};

struct DoctorConfig {
  std::optional<unsigned> expected_gpus{};
  std::vector<std::string> probe_targets{};  // far targets; the gateway is added when known
  // Where the findings' runbook links point (finding_ids.h): a folder or a URL; empty: the
  // source tree's docs/runbooks.
  std::string runbook_base{};
  // [security]: commands that may use a GPU outside a job (a glob, or "re:" and a regular
  // expression, on the command line, the executable or the name), and ports that may listen.
  std::vector<std::string> allowed_gpu_commands{};
  std::vector<ListenPortRule> allowed_listen_ports{};
};

// A port the agent has seen listening on this host (the store's listen_ports table).
struct SeenListenPort {
  std::string proto{};  // "tcp" or "udp"
  unsigned port = 0;
  TimeNs first_seen = 0;
  TimeNs last_seen = 0;
};

// One GPU fault incident from the agent's store (store/incidents.h), for the history checks.
struct IncidentRecord {
  struct Remediation {
    std::string action{};  // "reset", "reboot", "reseat", "replace", "rma"
    std::string note{};
    std::string who{};
    TimeNs at = 0;
  };
  std::int64_t id = 0;
  unsigned gpu = 0;  // NVML index at the time
  std::string uuid{};
  std::string serial{};
  std::string pci_bus_id{};
  std::string hostname{};
  std::string kind{};   // the device health that opened it ("lost", "error", ...)
  std::string cause{};  // "xid_79", "health_lost", ...
  TimeNs started = 0;   // the fault
  std::optional<TimeNs> detected{};
  std::optional<TimeNs> fenced{};
  std::optional<TimeNs> returned{};  // back in service; unset while open
  std::string returned_by{};
  std::string evidence{};
  std::vector<Remediation> remediations{};  // oldest first
  // The card: serial, else UUID ("" when neither is known: the incident joins no history).
  [[nodiscard]] std::string card() const { return serial.empty() ? uuid : serial; }
};

struct DoctorInput {
  TimeNs now = 0;
  bool offline = false;                    // no live NVML or probes
  std::shared_ptr<const FileSystem> fs{};  // the host tree (sysfs lookups: AER port → GPU)
  DoctorConfig config;

  // GPU samples over the window, oldest first; empty when NVML was not asked (offline).
  std::vector<nvml::GpuSnapshot> gpu_samples{};
  // Host snapshots over the window, oldest first (at least one).
  std::vector<host::HostSnapshot> host_samples{};
  std::optional<host::HostRates> rates{};  // first vs last host snapshot, when they differ
  std::vector<ProcessActivity> gpu_processes{};

  // Kernel log: every recognised event in log order, where it came from, and the boots.
  std::vector<kmsg::KernelEvent> events{};
  std::string kmsg_source{};
  std::vector<Boot> boots{};
  // Lines that belong to an event but carry no structure of their own (AER detail lines,
  // call traces after a hung-task line): event index → the lines, verbatim.
  std::vector<std::pair<std::size_t, std::vector<std::string>>> event_context{};
  // Set when a kernel log (a file or the live one) was parsed; unset for --no-kmsg or a store.
  std::optional<KernelLogRead> kmsg_read{};

  std::vector<ProbeResult> probes{};
  // Traffic by process over the window (netproc): live only, absent offline.
  std::optional<netproc::Traffic> traffic{};
  std::vector<GpuHistory> history{};  // from --db
  // The store's fault incidents over kIncidentLookback (--db), oldest first.
  std::vector<IncidentRecord> incidents{};

  // The serving view: processes' memory over time, their command lines (pid → the line,
  // NULs as blanks, shortened), and the inference engines read ([serving] engines).
  std::vector<ProcessVram> process_vram{};
  std::vector<std::pair<std::uint32_t, std::string>> process_cmdlines{};
  std::vector<EngineRead> engines{};

  // Signs of compromise: every process's executable, command line, user and sockets, the
  // sockets of /proc/net, the UID 0 accounts (security_facts.h); unset when not read.
  std::optional<SecurityFacts> security{};
  // Ports the agent's store has seen listening (--db), oldest first; unset without a store or
  // when the store keeps no such table.
  std::optional<std::vector<SeenListenPort>> seen_listen_ports{};
  // `--baseline FILE`: the configuration this host should have (src/baseline), compared with
  // what it has (read through `fs` and the last GPU sample) by the drift check.
  std::optional<baseline::Baseline> baseline{};
  std::string baseline_file{};

  // Convenience: the last GPU snapshot, or nullptr when none was taken.
  [[nodiscard]] const nvml::GpuSnapshot* last_gpus() const {
    return gpu_samples.empty() ? nullptr : &gpu_samples.back();
  }
  [[nodiscard]] const host::HostSnapshot* last_host() const {
    return host_samples.empty() ? nullptr : &host_samples.back();
  }
};

}  // namespace cardiac::doctor
