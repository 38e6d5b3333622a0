// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the simulator's inputs: the generic and openb trace parsers, the openb node
// list, the cluster shape, the failure-preset and checkpoint-policy texts. The first byte picks
// the parser; the rest is its input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "check.h"
#include "sim/checkpoint.h"
#include "sim/engine.h"
#include "sim/failures.h"
#include "sim/trace.h"

namespace {

using namespace cardiac;

// Parsed traces are sorted by submit time, then id, with at least one GPU per job and no
// negative times (trace.h).
void check_trace(const sim::Trace& t) {
  for (std::size_t i = 0; i < t.jobs.size(); ++i) {
    const sim::TraceJob& j = t.jobs[i];
    CARDIAC_FUZZ_CHECK(j.gpus >= 1);
    CARDIAC_FUZZ_CHECK(j.duration >= 0 && j.submit >= 0);
    CARDIAC_FUZZ_CHECK(j.gpu_share > 0 && j.gpu_share <= 1);
    if (i > 0) {
      const sim::TraceJob& p = t.jobs[i - 1];
      CARDIAC_FUZZ_CHECK(p.submit < j.submit || (p.submit == j.submit && p.id <= j.id));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      if (auto t = sim::parse_generic_csv(text, "fuzz.csv")) check_trace(*t);
      break;
    case 1:
      if (auto t = sim::parse_openb_csv(text, "fuzz.csv")) check_trace(*t);
      break;
    case 2:
      if (auto g = sim::parse_openb_nodes(text, "fuzz.csv")) {
        for (const auto& n : *g) CARDIAC_FUZZ_CHECK(n.count >= 1);
      }
      break;
    case 3:
      if (auto c = sim::parse_cluster(text)) CARDIAC_FUZZ_CHECK(c->nodes() >= 1);
      break;
    case 4:
      if (auto m = sim::failure_preset(text))
        CARDIAC_FUZZ_CHECK(sim::validate_model(*m).has_value());
      break;
    default:
      if (auto p = sim::parse_checkpoint_policy(text)) {
        CARDIAC_FUZZ_CHECK(sim::interval_for(*p, 3600) > 0);
      }
      break;
  }
  return 0;
}
