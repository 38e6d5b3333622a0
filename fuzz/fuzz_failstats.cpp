// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the `cardiac.failure-stats/v1` reader (src/failstats/file_format.cpp): a
// statistics file exported by another node, as `cardiac sim --failures-from` reads it. A file
// that parses must write back (to_json) to JSON that reads to the same statistics, give its CSV
// reports, and fit (fit_model) a failure model whose rates are finite and not negative, or be
// refused for a reason fit.h gives (no exposure, a repair mean over ten years, a rate that is
// not a finite number).
//
// CARDIAC_FUZZ_WRITE_SEEDS=DIR writes statistics files into DIR (tabulated from made-up
// incidents by the library itself, so the seeds follow the format) and exits.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "failstats/file_format.h"
#include "failstats/fit.h"

namespace {

using namespace cardiac;
using namespace cardiac::failstats;

bool unique_node_names(const FailureStats& s) {
  std::set<std::string> names;
  for (const auto& n : s.nodes) {
    if (!names.insert(n.node).second) return false;
  }
  return true;
}

bool rates_are_numbers(const FailureStats& s) {
  for (auto c : s.counts) {
    if (!std::isfinite(static_cast<double>(c) / s.gpu_days)) return false;
  }
  return true;
}

void check_model(const sim::FailureModel& m) {
  for (const auto& c : m.components) {
    CARDIAC_FUZZ_CHECK(std::isfinite(c.per_gpu_day) && c.per_gpu_day >= 0);
    CARDIAC_FUZZ_CHECK(c.repair >= 0);
  }
  CARDIAC_FUZZ_CHECK(m.lemon_fraction >= 0 && m.lemon_fraction <= 1);
  CARDIAC_FUZZ_CHECK(std::isfinite(m.lemon_factor) && m.lemon_factor >= 1);
  CARDIAC_FUZZ_CHECK(std::isfinite(m.repair_sigma) && m.repair_sigma >= 0);
}

// ---- seeds ------------------------------------------------------------------------------------

constexpr DurationNs kHour = 3600 * kNsPerSec;

bool write_seed(const std::string& dir, const std::string& name, const Result<FailureStats>& s,
                bool without_times = false) {
  if (!s) return false;
  nlohmann::json j = to_json(*s);
  j.erase("derived");   // what a person reads: the reader ignores it
  if (without_times) {  // the times are optional (docs/stats.md)
    for (auto& c : j["classes"]) c["repair"].erase("hours");
  }
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out << j.dump(1);
  return static_cast<bool>(out);
}

int write_seeds(const std::string& dir) {
  // Two nodes, an open incident, a node-wide fault (as the file format test has them); once
  // with the repair times and once without.
  const auto two_nodes =
      tabulate({{FaultClass::kGpuLost, 0, 3 * kHour, "GPU-aaaa", "node1"},
                {FaultClass::kGpuMemory, 5 * kHour, std::nullopt, "GPU-bbbb", "node1"},
                {FaultClass::kNetwork, 7 * kHour, 9 * kHour, "", "node2"},
                {FaultClass::kSoftware, 8 * kHour, 8 * kHour, "", "node2"}},
               {{"node1", 8, 80}, {"node2", 8, 80}}, 0, 240 * kHour);
  bool ok = write_seed(dir, "two-nodes", two_nodes);
  ok = write_seed(dir, "two-nodes-without-times", two_nodes, true) && ok;
  // A fleet with one lemon node: the dispersion test and the mixture fit run.
  std::vector<IncidentRecord> lemon;
  std::vector<NodeExposure> nodes;
  for (int n = 0; n < 12; ++n) {
    const std::string node = "n" + std::to_string(n);
    nodes.push_back({node, 8, 800});
    const int failures = n == 0 ? 20 : n % 3;
    for (int i = 0; i < failures; ++i) {
      const TimeNs start = (n * 50 + i) * kHour;
      lemon.push_back({i % 2 == 0 ? FaultClass::kGpuLost : FaultClass::kThermal, start,
                       start + (i + 1) * kHour, "GPU-" + std::to_string(n * 8 + i % 8), node});
    }
  }
  ok = write_seed(dir, "lemon-fleet", tabulate(lemon, nodes, 0, 2400 * kHour)) && ok;
  ok = write_seed(dir, "no-exposure", tabulate({}, {}, 0, kHour)) && ok;
  return ok ? 0 : 1;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  cardiac::fuzz::write_seeds_if_asked(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  auto s = parse_stats(text, "stats.json");
  if (!s) {
    CARDIAC_FUZZ_CHECK(s.error().what().find("stats.json") != std::string::npos);
    return 0;
  }
  // Compared as text: a NaN figure is written as null, and NaN != NaN.
  const std::string written = to_json(*s).dump();
  if (unique_node_names(*s)) {  // nodes are sorted by name; equal names in any order
    auto back = parse_stats(written, "back.json");
    CARDIAC_FUZZ_CHECK(back && to_json(*back).dump() == written);
  }
  for (By by : {By::kClass, By::kNode, By::kGpu}) (void)to_csv(*s, by);
  auto model = fit_model(*s);
  if (model) {
    check_model(*model);
  } else {
    // fit.h's refusals: no exposure, a repair mean over ten years, a rate that is no number.
    const std::string why = model.error().what();
    CARDIAC_FUZZ_CHECK(!(s->gpu_days > 0) || !rates_are_numbers(*s) ||
                       why.find("(ten years)") != std::string::npos);
  }
  return 0;
}
