// SPDX-License-Identifier: Apache-2.0
// The /metrics text rendered once per distinct input rather than once per scrape.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "metrics/exposition.h"

namespace cardiac::metrics {

// Scrapes come far more often than new samples (several scrapers, dashboards, a person with
// curl), and rendering is most of a plain scrape's cost. The cache keeps the last input and its
// text and renders again only when the input differs: a new report, or any of the counters,
// the kernel-log state or the queue's numbers that come in beside it. Thread-safe; concurrent
// scrapes of a new sample wait for one render.
class ExpositionCache {
 public:
  // The text for `in`: the same pointer as last time when nothing changed. `report` owns
  // `*in.report` (both null before the first sample); it is held so that a later report cannot
  // reuse the address and be taken for the cached one.
  std::shared_ptr<const std::string> render(const ExpositionInput& in, const ExpositionOptions& opt,
                                            std::shared_ptr<const health::StatusReport> report);
  // How many times render_metrics() ran (tests: a second scrape of one sample runs none).
  [[nodiscard]] std::uint64_t renders() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const health::StatusReport> report_;
  ExpositionInput in_;
  ExpositionOptions opt_;
  std::shared_ptr<const std::string> text_;
  RenderScratch scratch_;
  std::uint64_t renders_ = 0;
};

}  // namespace cardiac::metrics
