// SPDX-License-Identifier: Apache-2.0
#include "doctor/live/store_input.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "doctor/kernel_log.h"
#include "serving/vram_book.h"
#include "store/query.h"
#include "store/schema.h"
#include "store/sealed.h"

namespace cardiac::doctor {

// The store's raw samples since `since`, regrouped into one GpuSnapshot per sampling instant
// so the checks read history and live samples the same way.
Result<std::vector<nvml::GpuSnapshot>> snapshots_from_store(const store::Db& db, TimeNs since) {
  std::map<std::int64_t, std::string> names;
  auto st = db.prepare("SELECT id, name FROM metrics");
  if (!st) return fail(st.error());
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    names[st->column_int64(0)] = st->column_text(1);
  }
  auto series = store::read_all_series(db, since, std::numeric_limits<TimeNs>::max());
  if (!series) return fail(series.error());
  std::map<TimeNs, std::map<unsigned, nvml::GpuReading>> by_time;
  for (const auto& [key, points] : *series) {
    if (key.gpu == store::kHostGpu) continue;
    const auto gpu = static_cast<unsigned>(key.gpu);
    const std::string& name = names[key.metric_id];
    for (const store::Point& p : points) {
      const TimeNs t = p.time;
      const double v = p.value;
      auto& g = by_time[t][gpu];
      g.index = gpu;
      g.sampled_at = t;
      if (!name.starts_with("gpu_")) continue;
      std::string_view field = std::string_view(name).substr(4);
#define CARDIAC_GPU_FIELD(member, ...)           \
  if (field == #member) {                        \
    using T = std::decay_t<decltype(*g.member)>; \
    g.member = static_cast<T>(v);                \
  }
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
    }
  }
  std::vector<nvml::GpuSnapshot> out;
  for (auto& [t, gpus] : by_time) {
    nvml::GpuSnapshot s;
    s.available = true;
    s.taken_at = t;
    for (auto& [idx, g] : gpus) s.gpus.push_back(std::move(g));
    out.push_back(std::move(s));
  }
  return out;
}

// Events the agent stored, turned back into kernel events. Kernel-log rows keep the original
// line in their dedup key ("<time>|<kind>|<line>"), so they are classified again in full.
std::vector<kmsg::KernelEvent> events_from_store(const std::vector<store::Event>& stored) {
  std::vector<kmsg::KernelEvent> out;
  for (const auto& e : stored) {
    std::optional<kmsg::KernelEvent> ke;
    auto first = e.dedup_key.find('|');
    auto second = first == std::string::npos ? first : e.dedup_key.find('|', first + 1);
    if (e.source != "nvml" && second != std::string::npos) {
      ke = kmsg::classify_line(std::string_view(e.dedup_key).substr(second + 1));
    }
    if (!ke) {
      // Every stored kind is a kernel-event name (NVML's Xids are stored as "xid").
      auto kind = kmsg::parse_event_kind(e.kind);
      if (!kind) continue;
      kmsg::KernelEvent k;
      k.kind = *kind;
      if (e.xid) k.xid = static_cast<int>(*e.xid);
      k.pci_bus_id = e.pci_bus_id;
      k.message = e.message;
      k.raw = e.message;
      ke = k;
    }
    ke->time_ns = e.time_ns;
    out.push_back(std::move(*ke));
  }
  return out;
}

// Longer series than the raw window: the temperature over the requested span (for charts) and
// retired DBE pages over a week (DCGM's "more than one new in a week" rule).
Result<std::vector<GpuHistory>> history_from_store(const store::Db& db, TimeNs now,
                                                   DurationNs span) {
  auto stored = store::gpus_with_raw_samples(db, now - kStoredEventsLookback);
  if (!stored) return fail(stored.error());
  std::vector<unsigned> gpus;
  for (std::int64_t g : *stored) gpus.push_back(static_cast<unsigned>(g));
  struct Wanted {
    const char* stored;
    const char* name;
    DurationNs span;
  };
  const Wanted wanted[] = {{"gpu_temperature", "temperature", span},
                           {"gpu_retired_pages_dbe", "retired_pages_dbe", kStoredEventsLookback}};
  std::vector<GpuHistory> out;
  for (unsigned gpu : gpus) {
    GpuHistory h;
    h.gpu = gpu;
    for (const auto& w : wanted) {
      store::HistoryQuery q;
      q.metric = w.stored;
      q.gpu = gpu;
      q.since = now - w.span;
      q.until = now + 1;
      q.step = std::max<DurationNs>(kNsPerSec, w.span / 300);
      auto hist = store::history(db, q);
      if (!hist) return fail(hist.error());
      if (hist->points.empty()) continue;
      std::vector<std::pair<TimeNs, double>> points;
      for (const auto& p : hist->points) points.emplace_back(p.time, p.avg);
      h.series.emplace_back(w.name, std::move(points));
    }
    if (!h.series.empty()) out.push_back(std::move(h));
  }
  return out;
}

Result<std::vector<IncidentRecord>> incidents_from_store(const store::Db& db, TimeNs since) {
  auto stored = store::incidents_since(db, since);
  if (!stored) return fail(stored.error());
  std::vector<IncidentRecord> out;
  for (auto it = stored->rbegin(); it != stored->rend(); ++it) {
    IncidentRecord r;
    r.id = it->id;
    r.gpu = it->gpu;
    r.uuid = it->uuid;
    r.serial = it->serial;
    r.pci_bus_id = it->pci_bus_id;
    r.hostname = it->hostname;
    r.kind = std::string(nvml::device_health_name(it->kind));
    r.cause = it->cause;
    r.started = it->started_ns;
    r.detected = it->detected_ns;
    r.fenced = it->fenced_ns;
    r.returned = it->ended_ns;
    r.returned_by = it->returned_by;
    r.evidence = it->evidence;
    for (const auto& m : it->remediations) {
      r.remediations.push_back(
          {std::string(store::remediation_action_name(m.action)), m.note, m.who, m.at_ns});
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The agent's per-process memory book beside its store (serving/vram_book.h). A store without
// one (an older agent, or none running) is not an error; a damaged one is noted and skipped.
void read_process_book(const std::string& db_path, DoctorInput& in,
                       std::vector<std::string>& skipped) {
  const auto path = (std::filesystem::path(db_path).parent_path() / "gpu-processes.json").string();
  std::ifstream file(path);
  if (!file) return;
  auto j = nlohmann::json::parse(file, nullptr, false);
  auto tracks =
      j.is_discarded()
          ? Result<std::vector<serving::ProcessTrack>>(fail(Error::parse("not JSON", path)))
          : serving::tracks_from_json(j, path);
  if (!tracks) {
    skipped.push_back("serving: " + tracks.error().what());
    return;
  }
  for (auto& t : *tracks) {
    ProcessVram p;
    p.gpu = t.gpu;
    p.pid = t.pid;
    p.name = std::move(t.name);
    p.cmdline = std::move(t.cmdline);
    p.points = std::move(t.points);
    p.gpu_total_bytes = t.gpu_total_bytes;
    p.gpu_free_bytes = t.gpu_free_bytes;
    p.source = "agent";
    in.process_vram.push_back(std::move(p));
  }
}

}  // namespace cardiac::doctor
