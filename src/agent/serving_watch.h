// SPDX-License-Identifier: Apache-2.0
// The serving view in the agent: each GPU process's memory over time (serving::VramBook, fed
// by the sampler's collect stage, saved beside the store for the doctor) and the inference
// engines' /metrics (scraped on their own thread), both turned into rule points:
//
//   gpu_process_vram_oom_minutes{gpu,uuid,pid,process}  only while a process grows steadily
//   serving_engine_up{engine}                            1 read, 0 not (the error is logged)
//   serving_kv_cache_usage_pct, serving_requests_waiting, serving_requests_running,
//   serving_preemptions_total{engine}                    the engine's own figures
//   serving_kv_cache_full{engine}                        1 when serving::judge_engine says
//                                                        memory-bound, else 0
//   serving_queue_while_gpu_idle{engine}                 1 when it says scheduling, else 0
//
// With no GPU process and no engine configured this costs a loop over the sample's GPUs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/parts.h"
#include "config/config.h"
#include "core/clock.h"
#include "nvml/gpu.h"
#include "platform/fs.h"
#include "rules/sample_view.h"
#include "serving/engine_metrics.h"
#include "serving/vram_book.h"

namespace cardiac::agent {

// The last two reads of each configured engine, in configuration order (the older one tells
// whether preemptions rose).
struct EngineRead {
  serving::EngineStats last;
  std::optional<serving::EngineStats> before;
};
using EngineReads = std::vector<EngineRead>;

class ServingWatch {
 public:
  // `book_path`: where the book is saved ("" = never); `engines`: the scrape thread's latest
  // reads, or null when no engine is configured.
  ServingWatch(const config::ServingSettings& s, std::string book_path,
               std::shared_ptr<const FileSystem> fs, const Latest<EngineReads>* engines,
               const Clock& clock);
  // One sample (the sampler's thread): the book, then the points for the rules.
  void add(const nvml::GpuSnapshot& gpus, TimeNs now, std::vector<rules::Point>& out);
  // Writes the book when it changed and a minute passed since the last write (and at stop).
  void save(bool force = false);
  [[nodiscard]] const serving::VramBook& book() const { return book_; }

 private:
  void engine_points(const nvml::GpuSnapshot& gpus, std::vector<rules::Point>& out) const;

  serving::VramBook book_;
  std::string book_path_;
  std::shared_ptr<const FileSystem> fs_;
  const Latest<EngineReads>* engines_;
  const Clock& clock_;
  bool dirty_ = false;
  TimeNs last_save_ = 0;  // monotonic
};

// Reads every engine each `scrape_interval` into `out` until `stop`.
void run_engine_scrapes(const config::ServingSettings& s, Latest<EngineReads>& out,
                        const Clock& clock, Stopper& stop);

}  // namespace cardiac::agent
