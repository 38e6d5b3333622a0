// SPDX-License-Identifier: Apache-2.0
// Resources and performance: the "why is training slow" triage for GPUs that are held but
// idle, VRAM pressure, and the host's CPU, memory and disks.
//
// Finding ids: resources.gpu_starved (with the cause in the title: cpu_bound, data_loading,
// swapping, pcie_bound, throttled, unknown), resources.vram_full, resources.vram_preallocated
// (a full GPU that an inference engine reserved for its KV cache), resources.cpu_saturated,
// resources.memory_low, resources.swapping, resources.disk_full, resources.io_wait.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/units.h"
#include "doctor/checks/checks.h"
#include "doctor/gpu_map.h"
#include "nvml/clock_events.h"

namespace cardiac::doctor {
namespace {

// A GPU busy less than this while a process holds it is "waiting for work".
constexpr double kStarvedUtilPct = 50;
constexpr double kBusyThreadPct = 90;  // a thread this busy is the bottleneck of its process
constexpr double kIowaitPct = 20;
constexpr double kDiskBusyPct = 90;
constexpr double kIoPressurePct = 20;
constexpr double kVramWarnPct = 95;
constexpr double kCpuBusyPct = 95;
constexpr double kMemAvailableLowPct = 5;
constexpr double kSwapUsedFraction = 0.10;
constexpr double kDiskWarnPct = 90;
constexpr double kDiskCriticalPct = 97;
constexpr double kPcieBusyFraction = 0.8;

// NVML clock-event bits that mean the GPU is being slowed rather than idling.
constexpr std::uint64_t kSlowdownBits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct GpuWindow {
  const nvml::GpuReading* last = nullptr;
  std::vector<std::pair<TimeNs, double>> util;
  double mean_util = 0;
  std::uint64_t slowdown_bits = 0;  // OR over the window
  std::optional<double> pcie_peak_kbs;
};

std::map<unsigned, GpuWindow> gpu_windows(const DoctorInput& in) {
  std::map<unsigned, GpuWindow> out;
  for (const auto& snap : in.gpu_samples) {
    for (const auto& g : snap.gpus) {
      if (g.health != nvml::DeviceHealth::kOk) continue;
      auto& w = out[g.index];
      w.last = &g;
      if (g.utilization_gpu) {
        w.util.emplace_back(g.sampled_at ? g.sampled_at : snap.taken_at, *g.utilization_gpu);
      }
      if (g.clock_event_reasons) w.slowdown_bits |= *g.clock_event_reasons & kSlowdownBits;
      if (g.pcie_tx_kb_per_s || g.pcie_rx_kb_per_s) {
        double kbs = std::max(g.pcie_tx_kb_per_s.value_or(0), g.pcie_rx_kb_per_s.value_or(0));
        w.pcie_peak_kbs = std::max(w.pcie_peak_kbs.value_or(0), kbs);
      }
    }
  }
  for (auto& [idx, w] : out) {
    double sum = 0;
    for (const auto& [t, v] : w.util) sum += v;
    w.mean_util = w.util.empty() ? 100 : sum / static_cast<double>(w.util.size());
  }
  return out;
}

// PCIe bandwidth of one direction in KB/s for a link (gen, width), after encoding overhead.
std::optional<double> pcie_capacity_kbs(const nvml::GpuReading& g) {
  if (!g.pcie_gen_current || !g.pcie_width_current) return std::nullopt;
  static constexpr double kGbpsPerLane[] = {0, 2.0, 4.0, 7.88, 15.75, 31.5, 63.0};
  unsigned gen = *g.pcie_gen_current;
  if (gen == 0 || gen > 6) return std::nullopt;
  double gbytes = kGbpsPerLane[gen] * *g.pcie_width_current / 8.0;
  return gbytes * 1e6;
}

Evidence util_evidence(const GpuWindow& w) {
  Evidence e;
  e.kind = "reading";
  e.source = "nvml";
  e.metric = "utilization_gpu";
  e.unit = "%";
  e.series = w.util;
  e.text = fmt::format("GPU utilization averaged {:.0f} % over {} sample{}", w.mean_util,
                       w.util.size(), w.util.size() == 1 ? "" : "s");
  return e;
}

const ProcessActivity* activity_for(const DoctorInput& in, std::uint32_t pid) {
  for (const auto& p : in.gpu_processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

// The busiest disk over the window (by utilization), if any is busy.
const host::DiskRates* busiest_disk(const host::HostRates& r) {
  const host::DiskRates* best = nullptr;
  for (const auto& d : r.disks) {
    if (best == nullptr || d.util_percent > best->util_percent) best = &d;
  }
  return best;
}

struct IoPicture {
  bool starved = false;
  std::vector<Evidence> evidence;
  std::string disk;
};

IoPicture io_picture(const DoctorInput& in) {
  IoPicture p;
  const auto* h = in.last_host();
  std::optional<double> iowait;
  if (in.rates && in.rates->cpu.total) iowait = in.rates->cpu.total->iowait;
  if (iowait && *iowait >= kIowaitPct) {
    p.starved = true;
    p.evidence.push_back({.kind = "reading",
                          .text = fmt::format("CPU iowait {:.0f} % over {:.1f} s: CPUs idle "
                                              "waiting for storage",
                                              *iowait, in.rates->interval_s),
                          .source = "/proc/stat"});
  }
  if (in.rates) {
    if (const auto* d = busiest_disk(*in.rates); d != nullptr && d->util_percent >= kDiskBusyPct) {
      p.starved = true;
      p.disk = d->name;
      std::string mount;
      if (h != nullptr) {
        for (const auto& f : h->filesystems) {
          if (f.device.find(d->name) != std::string::npos) mount = f.mount_point;
        }
      }
      p.evidence.push_back(
          {.kind = "counter",
           .text = fmt::format(
               "{}{} busy {:.1f} % of the time, {} read/s, {:.0f} reads/s{}", d->name,
               mount.empty() ? "" : " (" + mount + ")", d->util_percent,
               format_bytes(static_cast<std::uint64_t>(d->read_bytes_per_s)), d->read_iops,
               d->await_ms ? fmt::format(", {:.1f} ms per I/O", *d->await_ms) : std::string()),
           .source = "/proc/diskstats"});
    }
  }
  if (h != nullptr && h->pressure.io && h->pressure.io->some &&
      h->pressure.io->some->avg10 >= kIoPressurePct) {
    p.starved = true;
    p.evidence.push_back({.kind = "reading",
                          .text = fmt::format("I/O pressure: some tasks stalled on I/O {:.0f} % "
                                              "of the last 10 s",
                                              h->pressure.io->some->avg10),
                          .source = "/proc/pressure/io"});
  }
  if (h != nullptr) {
    for (const auto& d : h->dstate_processes) {
      std::string wchan = d.wchan.value_or("");
      if (wchan.find("io_schedule") != std::string::npos ||
          wchan.find("wait_on_page") != std::string::npos ||
          wchan.find("folio_wait") != std::string::npos || wchan.find("nfs") != std::string::npos) {
        p.evidence.push_back({.kind = "process",
                              .text = fmt::format("pid {} ({}) waiting on I/O in {}", d.pid,
                                                  d.cmdline.empty() ? d.comm : d.cmdline, wchan),
                              .source = fmt::format("/proc/{}/wchan", d.pid)});
      }
    }
  }
  return p;
}

struct Cause {
  std::string key;
  std::string title;
  std::string explanation;
  std::vector<Evidence> evidence;
  std::vector<std::string> actions;
  Confidence confidence = Confidence::kMedium;
};

std::optional<Cause> cpu_bound(const DoctorInput& in, const nvml::GpuReading& g) {
  for (const auto& proc : g.processes) {
    const auto* a = activity_for(in, proc.pid);
    if (a == nullptr || a->threads.empty()) continue;
    const auto& top = a->threads.front();
    if (top.cpu_percent < kBusyThreadPct) continue;
    Cause c;
    c.key = "cpu_bound";
    c.title = fmt::format("the feeding process is CPU-bound (thread {} \"{}\" at {:.0f} %)",
                          top.tid, top.comm, top.cpu_percent);
    c.explanation = fmt::format(
        "Process {} ({}) holds the GPU, and one of its threads uses a whole CPU core while the GPU "
        "waits. The GPU gets work only as fast as that thread can prepare and launch it: Python "
        "preprocessing, a single data-loader worker, or launching many tiny kernels.",
        a->pid, a->comm);
    for (std::size_t i = 0; i < a->threads.size() && i < 5; ++i) {
      const auto& t = a->threads[i];
      c.evidence.push_back({.kind = "process",
                            .text = fmt::format("thread {} \"{}\" {:.0f} % of a core, state {}",
                                                t.tid, t.comm, t.cpu_percent, t.state),
                            .source = fmt::format("/proc/{}/task/{}/stat", a->pid, t.tid)});
    }
    c.actions = {"Profile the process (py-spy dump --pid " + std::to_string(a->pid) +
                     ", or the framework's profiler) to see what the busy thread does",
                 "Move preprocessing off the main thread: more data-loader workers "
                 "(num_workers), pinned memory, prefetching",
                 "Do augmentation on the GPU (e.g. DALI) or pre-process the data set once",
                 "Batch small operations together or use CUDA graphs / torch.compile to cut "
                 "launch overhead"};
    return c;
  }
  return std::nullopt;
}

std::optional<Cause> swapping(const DoctorInput& in) {
  const auto* h = in.last_host();
  if (h == nullptr || !h->memory || !h->memory->swap_total || !h->memory->swap_free) {
    return std::nullopt;
  }
  const auto& m = *h->memory;
  if (*m.swap_total == 0) return std::nullopt;
  std::uint64_t used = *m.swap_total - std::min(*m.swap_free, *m.swap_total);
  bool pressure = h->pressure.memory && h->pressure.memory->some &&
                  h->pressure.memory->some->avg10 >= kIoPressurePct;
  if (static_cast<double>(used) < kSwapUsedFraction * static_cast<double>(*m.swap_total) &&
      !pressure) {
    return std::nullopt;
  }
  Cause c;
  c.key = "swapping";
  c.title = "the host is short of memory and swapping";
  c.explanation =
      "The host has pushed memory out to swap. A training process whose data, pinned buffers or "
      "data-loader workers are swapped out stalls on every access, and the GPU waits.";
  c.evidence.push_back(
      {.kind = "reading",
       .text = fmt::format(
           "{} of {} swap in use{}", format_bytes(used), format_bytes(*m.swap_total),
           m.available ? fmt::format(", {} memory available", format_bytes(*m.available))
                       : std::string()),
       .source = "/proc/meminfo"});
  c.actions = {"Find what uses the memory (ps aux --sort=-rss | head)",
               "Use fewer data-loader workers or smaller prefetch buffers, or add memory",
               "Do not run other memory-hungry jobs on a training node"};
  return c;
}

std::optional<Cause> pcie_bound(const GpuWindow& w) {
  if (!w.pcie_peak_kbs || w.last == nullptr) return std::nullopt;
  auto cap = pcie_capacity_kbs(*w.last);
  if (!cap || *w.pcie_peak_kbs < kPcieBusyFraction * *cap) return std::nullopt;
  Cause c;
  c.key = "pcie_bound";
  c.title = "host-to-GPU transfers saturate the PCIe link";
  c.explanation = fmt::format(
      "The PCIe link (Gen{} x{}) carries {:.1f} GB/s, near its {:.1f} GB/s capacity, while the GPU "
      "computes little: the job moves more data over PCIe than it computes on.",
      *w.last->pcie_gen_current, *w.last->pcie_width_current, *w.pcie_peak_kbs / 1e6, *cap / 1e6);
  c.evidence.push_back({.kind = "reading",
                        .text = fmt::format("PCIe peak {:.1f} GB/s of {:.1f} GB/s",
                                            *w.pcie_peak_kbs / 1e6, *cap / 1e6),
                        .source = "nvml"});
  c.actions = {"Keep data on the GPU between steps; use pinned memory and non_blocking copies",
               "Check the link runs at its full generation and width under load (cardiac status)"};
  return c;
}

std::optional<Cause> throttled(const GpuWindow& w) {
  if (w.slowdown_bits == 0) return std::nullopt;
  Cause c;
  c.key = "throttled";
  std::string reasons;
  for (const auto& r : nvml::decode_clock_event_reasons(w.slowdown_bits)) {
    if (!reasons.empty()) reasons += ", ";
    reasons += r.text;
  }
  c.title = "the GPU is being slowed down (" + reasons + ")";
  c.explanation =
      "The GPU's clocks were reduced during the window; see the hardware findings for why.";
  c.evidence.push_back(
      {.kind = "reading", .text = "clock event reasons: " + reasons, .source = "nvml"});
  c.actions = {"Fix the cause of the slowdown (temperature, power) named in the hardware findings"};
  return c;
}

void check_starved_gpus(const DoctorInput& in, const GpuMap& map, std::vector<Finding>& out) {
  auto windows = gpu_windows(in);
  IoPicture io = io_picture(in);
  for (const auto& [idx, w] : windows) {
    const auto* g = w.last;
    if (g == nullptr || w.util.empty()) continue;
    bool held = std::any_of(g->processes.begin(), g->processes.end(),
                            [](const nvml::GpuProcess& p) { return p.type != "graphics"; });
    if (!held || w.mean_util >= kStarvedUtilPct) continue;

    std::optional<Cause> cause = throttled(w);
    if (!cause) cause = cpu_bound(in, *g);
    if (!cause && io.starved) {
      Cause c;
      c.key = "data_loading";
      c.title = "data loading is the bottleneck: storage cannot keep up";
      c.explanation =
          "The GPU is held by a training process but mostly idle, while the CPUs wait on storage "
          "and the disk is saturated: the input pipeline reads data slower than the GPU "
          "consumes it.";
      if (!io.disk.empty()) {
        c.explanation += fmt::format(" The busy device is {}.", io.disk);
      }
      c.evidence = io.evidence;
      c.actions = {
          "Confirm with iostat -x 1 and the data loader's own timings (time per batch "
          "spent waiting for data)",
          "Stage the data set on faster local storage (NVMe, RAM disk) or cache it "
          "after the first epoch",
          "Use larger sequential reads: pack small files into shards (WebDataset, "
          "TFRecord), raise prefetching and the number of loader workers",
          "If the data is on a network file system, check its throughput and the NIC "
          "(see the network findings)"};
      c.confidence = Confidence::kHigh;
      cause = c;
    }
    if (!cause) cause = swapping(in);
    if (!cause) cause = pcie_bound(w);
    if (!cause) {
      Cause c;
      c.key = "unknown";
      c.title = "no local bottleneck visible";
      c.explanation =
          "The GPU is held but mostly idle, and this host shows no CPU, storage, memory, PCIe or "
          "throttling bottleneck. Common causes that are not visible from here: waiting on other "
          "ranks (a slow node or the network in multi-node training), synchronisation "
          "(.item(), logging every step), or a batch too small to fill the GPU.";
      c.actions = {"Profile one step (torch.profiler / Nsight Systems) to see where time goes",
                   "In multi-node jobs, compare step times across ranks and check the network "
                   "findings",
                   "Raise the batch size if memory allows"};
      c.confidence = Confidence::kLow;
      cause = c;
    }
    Finding f;
    f.id = "resources.gpu_starved";
    f.category = Category::kResources;
    f.severity = Severity::kWarning;
    f.confidence = cause->confidence;
    if (w.util.size() < 3 && f.confidence > Confidence::kLow) f.confidence = Confidence::kMedium;
    f.gpu = map.by_index(idx);
    std::string holders;
    for (const auto& p : g->processes) {
      if (!holders.empty()) holders += ", ";
      holders += fmt::format("{} ({})", p.pid, p.name.empty() ? "?" : p.name);
    }
    f.title = fmt::format("GPU {} is {:.0f} % busy while held by {}: {}", idx, w.mean_util, holders,
                          cause->title);
    f.explanation = cause->explanation;
    if (w.util.size() < 3) {
      f.explanation +=
          " Only a short window was sampled: run with a longer --window or against "
          "the agent's history to confirm.";
    }
    f.evidence.push_back(util_evidence(w));
    for (auto& e : cause->evidence) f.evidence.push_back(std::move(e));
    f.actions = cause->actions;
    out.push_back(std::move(f));
  }
}

// vLLM and SGLang take gpu_memory_utilization / mem_fraction_static of the GPU at start for
// their KV cache and keep it: full by design, and flat.
Finding vram_preallocated(const nvml::GpuReading& g, const GpuMap& map, double pct,
                          const PreallocatingEngine& by) {
  const serving::EngineGuess& engine = by.engine;
  Finding f;
  f.id = "resources.vram_preallocated";
  f.category = Category::kResources;
  f.severity = Severity::kInfo;
  f.confidence = Confidence::kHigh;
  f.gpu = map.by_index(g.index);
  f.title = fmt::format(
      "GPU {} memory is {:.0f} % used: preallocated by {} (KV cache), not "
      "exhaustion",
      g.index, pct, engine.engine);
  f.explanation = fmt::format(
      "{} reserves most of the GPU's memory when it starts and keeps its KV cache there; the "
      "level stays flat while it serves. A full GPU is how it is meant to run, not a sign of a "
      "leak or of memory running out{}.",
      engine.engine,
      engine.memory_fraction
          ? fmt::format(" (it was told to use {:.0f} % of the GPU)", *engine.memory_fraction * 100)
          : std::string());
  f.evidence.push_back({.kind = "reading",
                        .text = fmt::format("{} used of {}", format_bytes(*g.memory_used),
                                            format_bytes(*g.memory_total)),
                        .source = "nvml"});
  f.evidence.push_back(
      {.kind = "process",
       .text = fmt::format("pid {} recognised as {}: {}", by.pid, engine.engine, engine.why),
       .source = fmt::format("/proc/{}/cmdline", by.pid)});
  f.actions = {
      "Nothing to do for memory; if another process must share this GPU, lower the "
      "engine's memory fraction (vLLM --gpu-memory-utilization, SGLang "
      "--mem-fraction-static)",
      "If inference is slow, see the serving findings (KV cache full, requests queued)"};
  return f;
}

void check_vram(const DoctorInput& in, const GpuMap& map, std::vector<Finding>& out) {
  const auto* snap = in.last_gpus();
  if (snap == nullptr) return;
  for (const auto& g : snap->gpus) {
    if (!g.memory_total || !g.memory_used || *g.memory_total == 0) continue;
    double pct = 100.0 * static_cast<double>(*g.memory_used) / static_cast<double>(*g.memory_total);
    if (pct < kVramWarnPct) continue;
    if (auto engine = preallocating_engine(in, g)) {
      out.push_back(vram_preallocated(g, map, pct, *engine));
      continue;
    }
    Finding f;
    f.id = "resources.vram_full";
    f.category = Category::kResources;
    f.severity = Severity::kWarning;
    f.confidence = Confidence::kHigh;
    f.gpu = map.by_index(g.index);
    f.title = fmt::format("GPU {} memory is {:.0f} % full: out-of-memory risk", g.index, pct);
    f.explanation =
        "The next allocation that does not fit fails with CUDA out of memory. Frameworks cache "
        "freed memory, so a full GPU can be normal for one process; several processes sharing "
        "the GPU, or usage that grows step after step, is not.";
    f.evidence.push_back({.kind = "reading",
                          .text = fmt::format("{} used of {}", format_bytes(*g.memory_used),
                                              format_bytes(*g.memory_total)),
                          .source = "nvml"});
    for (const auto& p : g.processes) {
      if (!p.used_memory_bytes) continue;
      f.evidence.push_back(
          {.kind = "process",
           .text = fmt::format("pid {} ({}) holds {}", p.pid, p.name.empty() ? "?" : p.name,
                               format_bytes(*p.used_memory_bytes)),
           .source = "nvml"});
    }
    f.actions = {"Lower the batch size (keep the effective batch with gradient accumulation)",
                 "Use mixed precision (bf16/fp16) to halve activations and weights",
                 "Turn on activation checkpointing for the largest layers",
                 "If usage grows every step, look for tensors kept alive across steps (a leak)"};
    if (g.processes.size() > 1) {
      f.actions.insert(f.actions.begin(),
                       "Several processes share this GPU: give each job its own GPU");
    }
    out.push_back(std::move(f));
  }
}

void check_host(const DoctorInput& in, std::vector<Finding>& out) {
  const auto* h = in.last_host();
  if (h == nullptr) return;
  if (in.rates && in.rates->cpu.total && in.rates->cpu.total->busy >= kCpuBusyPct) {
    out.push_back(
        {.id = "resources.cpu_saturated",
         .category = Category::kResources,
         .severity = Severity::kWarning,
         .confidence = Confidence::kMedium,
         .title = fmt::format("host CPUs are {:.0f} % busy", in.rates->cpu.total->busy),
         .explanation = "Every core is busy: data loading, preprocessing and the "
                        "driver's own threads compete for CPU time.",
         .evidence = {{.kind = "reading",
                       .text = fmt::format("CPU busy {:.0f} % over {:.1f} s",
                                           in.rates->cpu.total->busy, in.rates->interval_s),
                       .source = "/proc/stat"}},
         .actions = {"Find the busiest processes (top -o %CPU)",
                     "Lower data-loader workers per GPU if they oversubscribe the "
                     "cores, or move other work off this host"}});
  }
  if (h->memory && h->memory->available && h->memory->total > 0) {
    double pct =
        100.0 * static_cast<double>(*h->memory->available) / static_cast<double>(h->memory->total);
    if (pct < kMemAvailableLowPct) {
      out.push_back({.id = "resources.memory_low",
                     .category = Category::kResources,
                     .severity = pct < 1 ? Severity::kCritical : Severity::kWarning,
                     .confidence = Confidence::kHigh,
                     .title = fmt::format("host memory nearly exhausted ({:.1f} % available)", pct),
                     .explanation = "The kernel's OOM killer ends processes when memory runs out; "
                                    "training jobs are usually the largest and go first.",
                     .evidence = {{.kind = "reading",
                                   .text = fmt::format("{} available of {}",
                                                       format_bytes(*h->memory->available),
                                                       format_bytes(h->memory->total)),
                                   .source = "/proc/meminfo"}},
                     .actions = {"Find the largest processes (ps aux --sort=-rss | head)",
                                 "Reduce data-loader workers or prefetch buffers; add memory"}});
    }
  }
  if (auto c = swapping(in)) {
    out.push_back({.id = "resources.swapping",
                   .category = Category::kResources,
                   .severity = Severity::kWarning,
                   .confidence = Confidence::kMedium,
                   .title = c->title,
                   .explanation = c->explanation,
                   .evidence = c->evidence,
                   .actions = c->actions});
  }
  for (const auto& fs : h->filesystems) {
    auto pct = host::used_percent(fs);
    if (!pct || *pct < kDiskWarnPct) continue;
    bool critical = *pct >= kDiskCriticalPct;
    out.push_back(
        {.id = "resources.disk_full",
         .category = Category::kResources,
         .severity = critical ? Severity::kCritical : Severity::kWarning,
         .confidence = Confidence::kHigh,
         .title = fmt::format("{} is {:.0f} % full", fs.mount_point, *pct),
         .explanation = "A full file system fails checkpoint writes and logs, often hours into "
                        "a run; the agent's own store stops growing too.",
         .evidence = {{.kind = "reading",
                       .text =
                           fmt::format("{} on {} ({}): {} left of {}", fs.mount_point, fs.device,
                                       fs.fs_type, format_bytes(fs.available.value_or(0)),
                                       format_bytes(fs.total.value_or(0))),
                       .source = "statvfs"}},
         .actions = {"Find what grew (du -xh --max-depth=2 " + fs.mount_point + " | sort -h)",
                     "Remove old checkpoints and caches; keep the last few checkpoints only"}});
  }
  // I/O wait with no GPU starved by it still slows everything on the host.
  bool reported = std::any_of(out.begin(), out.end(), [](const Finding& f) {
    return f.id == "resources.gpu_starved" && f.title.find("data loading") != std::string::npos;
  });
  IoPicture io = io_picture(in);
  if (io.starved && !reported) {
    out.push_back({.id = "resources.io_wait",
                   .category = Category::kResources,
                   .severity = Severity::kWarning,
                   .confidence = Confidence::kMedium,
                   .title = io.disk.empty() ? "the host waits on storage"
                                            : "the host waits on storage (" + io.disk + ")",
                   .explanation = "CPUs sit idle waiting for I/O; anything that reads data on "
                                  "this host, including a training job's data loader, is slowed.",
                   .evidence = io.evidence,
                   .actions = {"Confirm with iostat -x 1; find the readers with iotop",
                               "Move hot data to faster storage or spread it over devices"}});
  }
}

}  // namespace

void check_resources(const DoctorInput& in, std::vector<Finding>& out) {
  GpuMap map(in);
  std::vector<Finding> mine;
  check_starved_gpus(in, map, mine);
  check_vram(in, map, mine);
  check_host(in, mine);
  for (auto& f : mine) out.push_back(std::move(f));
}

}  // namespace cardiac::doctor
