// SPDX-License-Identifier: Apache-2.0
// The simulator's HTML report, byte for byte: two small runs with hand-made series, so that a
// change to how its charts are drawn (the SVG helper in core/svg.h it shares with the doctor)
// shows up as a diff of tests/fixtures/golden/charts/sim-report.html. CARDIAC_UPDATE_GOLDEN=1
// rewrites the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "sim/report.h"

namespace cardiac::sim {
namespace {

NamedResult run(std::string label, unsigned scale) {
  NamedResult r;
  r.label = std::move(label);
  r.result.summary.cluster_gpus = 16;
  r.result.summary.jobs = 3;
  r.result.summary.completed = 2;
  r.result.summary.by_size[8] = {};
  for (unsigned i = 0; i < 5; ++i) {
    SeriesPoint p;
    p.time = static_cast<TimeNs>(i) * 90 * kNsPerSec;
    p.allocated_gpus = (i * 3 * scale) % 17;
    p.productive_gpus = p.allocated_gpus / 2;
    p.down_gpus = i == 3 ? 1 : 0;
    p.pending = i * scale;
    p.interruptions = i % 2;
    r.result.series.push_back(p);
  }
  return r;
}

TEST(SimReport, HtmlPinnedBytes) {
  std::vector<NamedResult> runs = {run("fifo", 1), run("backfill <easy> & \"fair\"", 2)};
  const nlohmann::json setup = {{"trace", "synthetic"}, {"gpus", 16}};
  const std::string out = render_html(runs, setup);
  const std::string path = std::string(CARDIAC_FIXTURES_DIR) + "/golden/charts/sim-report.html";
  if (std::getenv("CARDIAC_UPDATE_GOLDEN")) std::ofstream(path, std::ios::trunc) << out;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no golden file " << path << " (run with CARDIAC_UPDATE_GOLDEN=1)";
  std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(out, golden) << "golden: " << path;
}

}  // namespace
}  // namespace cardiac::sim
