// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the Prometheus text reader that takes inference engines' /metrics
// (serving::parse_prom_text), and the engine figures and verdicts read from what it parses.
#include <cstddef>
#include <cstdint>

#include "check.h"
#include "serving/engine_metrics.h"
#include "serving/prom_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac;
  auto samples = serving::parse_prom_text(fuzz::as_text(data, size), "fuzz");
  if (!samples) {
    CARDIAC_FUZZ_CHECK(!samples.error().what().empty());
    return 0;
  }
  CARDIAC_FUZZ_CHECK(samples->size() <= serving::kMaxPromSamples);
  for (const auto& s : *samples) CARDIAC_FUZZ_CHECK(!s.name.empty());
  auto stats = serving::engine_stats(*samples);
  (void)serving::judge_engine(stats, &stats, 10.0);
  return 0;
}
