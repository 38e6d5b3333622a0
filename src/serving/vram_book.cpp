// SPDX-License-Identifier: Apache-2.0
#include "serving/vram_book.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cardiac::serving {

void VramBook::refit(ProcessTrack& t) const {
  t.growth = steady_growth(t.points, o_.criteria);
  t.seconds_to_oom = t.growth ? seconds_to_oom(*t.growth, t.gpu_free_bytes) : std::nullopt;
  t.preallocated = t.engine.has_value() && flat_and_high(t.points, t.gpu_total_bytes);
}

bool VramBook::add(const nvml::GpuSnapshot& snap, TimeNs now, const CmdlineReader& cmdline) {
  bool stored = false;
  std::set<Key> seen;
  for (const auto& g : snap.gpus) {
    if (g.health != nvml::DeviceHealth::kOk || !g.memory_total) continue;
    for (const auto& p : g.processes) {
      if (!p.used_memory_bytes) continue;
      const Key key{g.index, p.pid};
      seen.insert(key);
      auto it = tracks_.find(key);
      if (it == tracks_.end()) {
        if (tracks_.size() >= o_.max_processes) continue;
        ProcessTrack t;
        t.gpu = g.index;
        t.uuid = g.uuid;
        t.pid = p.pid;
        t.name = p.name;
        if (cmdline) t.cmdline = cmdline_text(cmdline(p.pid));
        t.engine = recognise_engine(t.name, t.cmdline);
        it = tracks_.emplace(key, std::move(t)).first;
      }
      ProcessTrack& t = it->second;
      t.last_seen = now;
      t.gpu_total_bytes = static_cast<double>(*g.memory_total);
      if (g.memory_free) {
        t.gpu_free_bytes = static_cast<double>(*g.memory_free);
      } else if (g.memory_used) {
        t.gpu_free_bytes =
            static_cast<double>(*g.memory_total - std::min(*g.memory_used, *g.memory_total));
      }
      if (!t.points.empty() && now - t.points.back().first < o_.step) continue;
      t.points.emplace_back(now, static_cast<double>(*p.used_memory_bytes));
      const TimeNs cutoff = now - o_.window;
      auto first_kept = std::find_if(t.points.begin(), t.points.end(),
                                     [&](const auto& pt) { return pt.first >= cutoff; });
      t.points.erase(t.points.begin(), first_kept);
      refit(t);
      stored = true;
    }
  }
  // A process gone from its GPU (ended, or a new pid reused later) starts over.
  if (snap.available) {
    std::erase_if(tracks_, [&](const auto& kv) { return !seen.contains(kv.first); });
  }
  return stored;
}

namespace {

nlohmann::json track_json(const ProcessTrack& t) {
  nlohmann::json j;
  j["gpu"] = t.gpu;
  j["uuid"] = t.uuid;
  j["pid"] = t.pid;
  j["name"] = t.name;
  j["cmdline"] = t.cmdline;
  if (t.engine) j["engine"] = t.engine->engine;
  j["gpu_total_bytes"] = t.gpu_total_bytes;
  j["gpu_free_bytes"] = t.gpu_free_bytes;
  auto& pts = j["points"] = nlohmann::json::array();
  for (const auto& [at, bytes] : t.points) pts.push_back({at, bytes});
  if (t.growth) {
    j["growth_bytes_per_s"] = t.growth->fit.slope_per_s;
    j["growth_r2"] = t.growth->fit.r2;
  }
  if (t.seconds_to_oom) j["seconds_to_oom"] = *t.seconds_to_oom;
  j["preallocated"] = t.preallocated;
  return j;
}

Result<ProcessTrack> track_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    ProcessTrack t;
    t.gpu = j.at("gpu").get<unsigned>();
    t.uuid = j.value("uuid", "");
    t.pid = j.at("pid").get<std::uint32_t>();
    t.name = j.value("name", "");
    t.cmdline = j.value("cmdline", "");
    t.engine = recognise_engine(t.name, t.cmdline);
    t.gpu_total_bytes = j.value("gpu_total_bytes", 0.0);
    t.gpu_free_bytes = j.value("gpu_free_bytes", 0.0);
    for (const auto& p : j.at("points")) {
      t.points.emplace_back(p.at(0).get<TimeNs>(), p.at(1).get<double>());
    }
    if (!std::is_sorted(t.points.begin(), t.points.end())) {
      return fail(Error::parse("points out of time order", where));
    }
    t.last_seen = t.points.empty() ? 0 : t.points.back().first;
    t.preallocated = j.value("preallocated", false);
    return t;
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::parse(e.what(), where));
  }
}

}  // namespace

nlohmann::json VramBook::to_json() const {
  nlohmann::json j;
  j["format"] = "cardiac.gpu-processes/v1";
  j["window_s"] = o_.window / kNsPerSec;
  j["step_s"] = o_.step / kNsPerSec;
  auto& arr = j["processes"] = nlohmann::json::array();
  for (const auto& [key, t] : tracks_) arr.push_back(track_json(t));
  return j;
}

Result<std::vector<ProcessTrack>> tracks_from_json(const nlohmann::json& j,
                                                   std::string_view origin) {
  if (!j.is_object() || j.value("format", "") != "cardiac.gpu-processes/v1" ||
      !j.contains("processes") || !j["processes"].is_array()) {
    return fail(Error::parse("not a cardiac.gpu-processes/v1 document", std::string(origin)));
  }
  std::vector<ProcessTrack> out;
  std::size_t i = 0;
  for (const auto& p : j["processes"]) {
    auto t = track_from_json(p, fmt::format("{}: processes[{}]", origin, i++));
    if (!t) return fail(t.error());
    out.push_back(std::move(*t));
  }
  return out;
}

Status VramBook::from_json(const nlohmann::json& j, TimeNs now, std::string_view origin) {
  auto tracks = tracks_from_json(j, origin);
  if (!tracks) return fail(tracks.error());
  tracks_.clear();
  for (auto& t : *tracks) {
    std::erase_if(t.points, [&](const auto& p) { return p.first < now - o_.window; });
    if (t.points.empty() || tracks_.size() >= o_.max_processes) continue;
    refit(t);
    const Key key{t.gpu, t.pid};
    tracks_.emplace(key, std::move(t));
  }
  return {};
}

}  // namespace cardiac::serving
