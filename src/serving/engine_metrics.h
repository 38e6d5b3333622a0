// SPDX-License-Identifier: Apache-2.0
// What an inference engine's /metrics says about why inference is slow: KV-cache use, the
// requests waiting and running, and preemptions, read under vLLM's, SGLang's and TGI's names,
// and the two verdicts the doctor and the agent give from them (memory-bound: the KV cache is
// full; scheduling-bound: requests queue while the GPU idles).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "serving/prom_text.h"

namespace cardiac::serving {

struct EngineStats {
  std::string url;
  std::string engine;                    // "vLLM", "SGLang", "TGI"; "" when none was recognised
  std::optional<double> kv_cache_usage;  // fraction 0..1 of the KV cache in use
  std::optional<double> requests_waiting;
  std::optional<double> requests_running;
  std::optional<double> preemptions_total;  // counter
  std::string error;                        // the scrape failed: why (then nothing else is set)
  TimeNs at = 0;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

// The engine's figures from a parsed exposition. Label sets of one name (several models, data-
// parallel ranks) are summed for counts and the highest is taken for the cache usage. An
// exposition with none of the known names gives an error saying so: a wrong URL (the API port
// instead of the metrics port, metrics not enabled) must not read as an idle engine.
EngineStats engine_stats(const std::vector<PromSample>& samples);

// The thresholds both the doctor and the agent's default rules use.
inline constexpr double kKvFullFraction = 0.95;
inline constexpr double kQueueIdleBusyPct = 50;

enum class Bottleneck { kKvCacheFull, kScheduling };

struct ServingVerdict {
  Bottleneck kind = Bottleneck::kKvCacheFull;
  std::string title;
  std::string explanation;
  std::vector<std::string> evidence;
  std::vector<std::string> actions;
};

// `before` is an earlier scrape of the same engine (preemptions rising), `gpu_busy_pct` the
// mean utilization of the GPUs the engine runs on (unset: unknown, no scheduling verdict).
std::optional<ServingVerdict> judge_engine(const EngineStats& now, const EngineStats* before,
                                           std::optional<double> gpu_busy_pct);

}  // namespace cardiac::serving
