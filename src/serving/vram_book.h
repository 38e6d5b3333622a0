// SPDX-License-Identifier: Apache-2.0
// Per-process GPU memory over time: the agent's in-memory book of what each GPU process held,
// a point per `step` over a `window` (30 minutes, a point each 15 s: at most 121 points per
// process), with each process's steady growth and projected time to out-of-memory recomputed
// only when a point is stored. It is kept in memory, not in the store: the store's series are
// keyed by (metric, GPU) and a process is neither; pids come and go, and the question ("does it
// grow?") needs only the last window. `to_json` / `from_json` write it beside the store
// (`<state-dir>/gpu-processes.json`) for the doctor and for an agent restart.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "nvml/gpu.h"
#include "serving/engines.h"
#include "serving/vram_trend.h"

namespace cardiac::serving {

struct ProcessTrack {
  unsigned gpu = 0;
  std::string uuid;
  std::uint32_t pid = 0;
  std::string name;     // comm
  std::string cmdline;  // shortened (cmdline_text)
  std::optional<EngineGuess> engine;
  Series points;  // (time, bytes), one per step, oldest first
  TimeNs last_seen = 0;
  double gpu_total_bytes = 0;
  double gpu_free_bytes = 0;  // at the last sample
  std::optional<Growth> growth;
  std::optional<double> seconds_to_oom;  // set with growth
  bool preallocated = false;             // a recognised engine at a flat high level
};

struct VramBookOptions {
  DurationNs window = 30 * 60 * kNsPerSec;
  DurationNs step = 15 * kNsPerSec;
  GrowthCriteria criteria{};
  std::size_t max_processes = 256;  // bound on memory whatever the machine runs
};

// Reads a process's command line (NUL-separated, as /proc/<pid>/cmdline); "" when unknown.
using CmdlineReader = std::function<std::string(std::uint32_t pid)>;

class VramBook {
 public:
  explicit VramBook(VramBookOptions o = {}) : o_(o) {}
  // One GPU sample. Reads the command line once per new process. Returns true when a point
  // was stored for some process (the projections changed).
  bool add(const nvml::GpuSnapshot& snap, TimeNs now, const CmdlineReader& cmdline);
  using Key = std::pair<unsigned, std::uint32_t>;  // (gpu, pid)
  [[nodiscard]] const std::map<Key, ProcessTrack>& tracks() const { return tracks_; }
  [[nodiscard]] const VramBookOptions& options() const { return o_; }

  [[nodiscard]] nlohmann::json to_json() const;
  // Restores the tracks (a restart keeps the window); points older than `now - window` dropped.
  Status from_json(const nlohmann::json& j, TimeNs now, std::string_view origin);

 private:
  void refit(ProcessTrack& t) const;
  VramBookOptions o_;
  std::map<Key, ProcessTrack> tracks_;
};

// The tracks of a saved book, as the doctor reads them (no projection recomputed).
Result<std::vector<ProcessTrack>> tracks_from_json(const nlohmann::json& j,
                                                   std::string_view origin);

}  // namespace cardiac::serving
