// SPDX-License-Identifier: Apache-2.0
// The serving view: a GPU process whose memory grows steadily (projected time to
// out-of-memory), and why inference is slow from the engines' own metrics (KV cache full →
// memory-bound; requests queued while the GPUs idle → batching or scheduling).
//
// Finding ids: serving.vram_growth, serving.kv_cache_full, serving.batching,
// serving.engine_unreachable. resources.cpp asks `preallocating_engine` before it calls a
// full GPU exhaustion.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/time.h"
#include "core/units.h"
#include "doctor/checks/checks.h"
#include "doctor/gpu_map.h"
#include "serving/engines.h"
#include "serving/vram_trend.h"

namespace cardiac::doctor {
namespace {

constexpr double kCriticalOomS = 600;         // the agent's default critical rule, 10 minutes
constexpr double kWarningOomS = 24 * 3600.0;  // beyond a day: worth knowing, not urgent
constexpr double kHighShare = 0.5;            // an engine holding half the GPU or more

std::string bytes(double b) {
  return format_bytes(static_cast<std::uint64_t>(std::max(0.0, b)));
}

std::string seconds_text(double s) {
  return format_duration(static_cast<DurationNs>(std::min(s, 1e9) * 1e9));
}

const std::string& cmdline_of(const DoctorInput& in, std::uint32_t pid) {
  static const std::string kNone;
  for (const auto& [p, line] : in.process_cmdlines) {
    if (p == pid) return line;
  }
  return kNone;
}

// The mean utilization over the window of the GPUs an engine runs on: those holding a process
// recognised as that engine, else every GPU a compute process holds.
std::optional<double> engine_gpu_busy(const DoctorInput& in, const std::string& engine) {
  std::map<unsigned, bool> engine_gpus;
  std::map<unsigned, bool> held;
  if (const auto* last = in.last_gpus()) {
    for (const auto& g : last->gpus) {
      for (const auto& p : g.processes) {
        if (p.type == "graphics") continue;
        held[g.index] = true;
        auto guess = serving::recognise_engine(p.name, cmdline_of(in, p.pid));
        if (guess && guess->engine == engine) engine_gpus[g.index] = true;
      }
    }
  }
  const auto& pick = engine_gpus.empty() ? held : engine_gpus;
  double sum = 0;
  std::size_t n = 0;
  for (const auto& snap : in.gpu_samples) {
    for (const auto& g : snap.gpus) {
      if (!pick.contains(g.index) || !g.utilization_gpu) continue;
      sum += *g.utilization_gpu;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

void check_growth(const DoctorInput& in, const GpuMap& map, std::vector<Finding>& out) {
  for (const auto& p : process_vram_series(in)) {
    auto growth = serving::steady_growth(p.points);
    if (!growth) continue;
    auto left = serving::seconds_to_oom(*growth, p.gpu_free_bytes);
    if (!left) continue;
    const double per_min = growth->fit.slope_per_s * 60;
    Finding f;
    f.id = "serving.vram_growth";
    f.category = Category::kResources;
    f.severity = *left < kCriticalOomS  ? Severity::kCritical
                 : *left < kWarningOomS ? Severity::kWarning
                                        : Severity::kInfo;
    f.confidence = growth->fit.r2 >= 0.95 ? Confidence::kHigh : Confidence::kMedium;
    f.gpu = map.by_index(p.gpu);
    const std::string who = fmt::format("{} ({})", p.pid, p.name.empty() ? "?" : p.name);
    f.title = fmt::format("GPU {}: process {} grows {} a minute: out of GPU memory in about {}",
                          p.gpu, who, bytes(per_min), seconds_text(*left));
    f.explanation = fmt::format(
        "Its GPU memory grew steadily from {} to {} over {} (a robust line through the points "
        "explains them with R² = {:.2f}). At that rate the {} still free on the GPU is used up "
        "in about {}, and the next allocation fails with CUDA out of memory. Memory that keeps "
        "growing while the work is steady is held on to: tensors kept across steps, a cache "
        "without a cap, finished requests' state never freed.",
        bytes(p.points.front().second), bytes(p.points.back().second),
        format_duration(growth->span), growth->fit.r2, bytes(p.gpu_free_bytes),
        seconds_text(*left));
    Evidence series;
    series.kind = "reading";
    series.source = p.source == "agent" ? "agent (gpu-processes.json)" : "nvml";
    series.metric = fmt::format("process {} memory", p.pid);
    series.unit = "bytes";
    series.series = p.points;
    series.text =
        fmt::format("{} points over {}: {} → {}, {} a minute (Theil–Sen, R² {:.2f})",
                    p.points.size(), format_duration(growth->span), bytes(p.points.front().second),
                    bytes(p.points.back().second), bytes(per_min), growth->fit.r2);
    f.evidence.push_back(std::move(series));
    f.evidence.push_back(
        {.kind = "reading",
         .text = fmt::format("{} free of {} on GPU {}: {} at this rate", bytes(p.gpu_free_bytes),
                             bytes(p.gpu_total_bytes), p.gpu, seconds_text(*left)),
         .source = "nvml"});
    if (!p.cmdline.empty()) {
      f.evidence.push_back({.kind = "process",
                            .text = fmt::format("pid {}: {}", p.pid, p.cmdline),
                            .source = fmt::format("/proc/{}/cmdline", p.pid)});
    }
    f.actions = {
        "Find what grows: take two memory snapshots some minutes apart "
        "(torch.cuda.memory._record_memory_history / memory_summary()) and compare them",
        "Look for tensors kept across steps: accumulate loss.item(), not loss; detach what is "
        "logged; empty lists that collect outputs",
        "For an inference server: check that finished requests' state is freed and that its "
        "caches are capped",
        fmt::format("If it cannot be fixed now, plan a restart before the projected time; the "
                    "agent's gpu_process_vram_oom_soon alert warns ahead (pid {})",
                    p.pid)};
    out.push_back(std::move(f));
  }
}

void check_engines(const DoctorInput& in, std::vector<Finding>& out) {
  for (const auto& read : in.engines) {
    const auto& now = read.latest();
    if (!now.ok()) {
      out.push_back(
          {.id = "serving.engine_unreachable",
           .category = Category::kConfiguration,
           .severity = Severity::kWarning,
           .confidence = Confidence::kHigh,
           .title = fmt::format("inference engine metrics at {} could not be read", now.url),
           .explanation =
               "The engine named in [serving] engines did not answer with its metrics, so "
               "nothing is known about its queue or KV cache: this is not a healthy engine, it "
               "is an unknown one.",
           .evidence = {{.kind = "probe", .text = now.error, .source = now.url}},
           .actions = {
               "Check that the engine runs and listens there (curl -s " + now.url + " | head)",
               "vLLM serves /metrics on its API port; SGLang needs --enable-metrics; "
               "TGI serves /metrics on its port",
               "Correct the URL in [serving] engines (cardiac.toml)"}});
      continue;
    }
    const serving::EngineStats* before = read.last ? &read.first : nullptr;
    auto verdict = serving::judge_engine(now, before, engine_gpu_busy(in, now.engine));
    if (!verdict) continue;
    Finding f;
    const bool kv = verdict->kind == serving::Bottleneck::kKvCacheFull;
    f.id = kv ? "serving.kv_cache_full" : "serving.batching";
    f.category = kv ? Category::kResources : Category::kConfiguration;
    f.severity = Severity::kWarning;
    f.confidence = Confidence::kMedium;
    f.title = verdict->title;
    f.explanation = verdict->explanation;
    for (auto& e : verdict->evidence) {
      f.evidence.push_back({.kind = "reading", .text = std::move(e), .source = now.url});
    }
    f.actions = verdict->actions;
    out.push_back(std::move(f));
  }
}

}  // namespace

std::vector<ProcessVram> process_vram_series(const DoctorInput& in) {
  std::map<std::pair<unsigned, std::uint32_t>, ProcessVram> by_key;
  for (const auto& p : in.process_vram) by_key[{p.gpu, p.pid}] = p;
  // The doctor's own samples continue the agent's series (or are the whole of it).
  for (const auto& snap : in.gpu_samples) {
    for (const auto& g : snap.gpus) {
      if (g.health != nvml::DeviceHealth::kOk || !g.memory_total) continue;
      const TimeNs t = g.sampled_at != 0 ? g.sampled_at : snap.taken_at;
      for (const auto& proc : g.processes) {
        if (!proc.used_memory_bytes) continue;
        auto [it, fresh] = by_key.try_emplace({g.index, proc.pid});
        ProcessVram& p = it->second;
        if (fresh) {
          p.gpu = g.index;
          p.pid = proc.pid;
          p.name = proc.name;
          p.source = "nvml";
        }
        if (!p.points.empty() && t <= p.points.back().first) continue;
        p.points.emplace_back(t, static_cast<double>(*proc.used_memory_bytes));
        p.gpu_total_bytes = static_cast<double>(*g.memory_total);
        if (g.memory_free) p.gpu_free_bytes = static_cast<double>(*g.memory_free);
      }
    }
  }
  std::vector<ProcessVram> out;
  for (auto& [key, p] : by_key) {
    if (p.cmdline.empty()) p.cmdline = cmdline_of(in, p.pid);
    if (p.name.empty() && p.points.empty()) continue;
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<PreallocatingEngine> preallocating_engine(const DoctorInput& in,
                                                        const nvml::GpuReading& g) {
  if (!g.memory_total || *g.memory_total == 0) return std::nullopt;
  const auto series = process_vram_series(in);
  for (const auto& p : g.processes) {
    auto guess = serving::recognise_engine(p.name, cmdline_of(in, p.pid));
    if (!guess || !p.used_memory_bytes) continue;
    const auto total = static_cast<double>(*g.memory_total);
    if (static_cast<double>(*p.used_memory_bytes) < kHighShare * total) continue;
    // Flat since it was first seen: a level that keeps rising is not the cache.
    for (const auto& s : series) {
      if (s.gpu != g.index || s.pid != p.pid) continue;
      if (serving::steady_growth(s.points) || !serving::flat_and_high(s.points, total, kHighShare))
        return std::nullopt;
    }
    return PreallocatingEngine{p.pid, *guess};
  }
  return std::nullopt;
}

void check_serving(const DoctorInput& in, std::vector<Finding>& out) {
  GpuMap map(in);
  check_growth(in, map, out);
  check_engines(in, out);
}

}  // namespace cardiac::doctor
