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

NamedResult run_report(std::string label, unsigned scale) {
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
  std::vector<NamedResult> runs = {run_report("fifo", 1),
                                   run_report("backfill <easy> & \"fair\"", 2)};
  const nlohmann::json setup = {{"trace", "synthetic"}, {"gpus", 16}};
  const std::string out = render_html(runs, setup);
  const std::string path = std::string(CARDIAC_FIXTURES_DIR) + "/golden/charts/sim-report.html";
  if (std::getenv("CARDIAC_UPDATE_GOLDEN")) std::ofstream(path, std::ios::trunc) << out;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no golden file " << path << " (run with CARDIAC_UPDATE_GOLDEN=1)";
  std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(out, golden) << "golden: " << path;
}

// The straggler rows and JSON appear only when a run has stragglers: runs without them print
// as before.
TEST(SimReport, FailSlowRowsOnlyWithStragglers) {
  std::vector<NamedResult> runs = {run_report("fcfs", 1)};
  EXPECT_EQ(render_table(runs).find("slow GPUs"), std::string::npos);
  EXPECT_FALSE(to_json(runs[0].result.summary).contains("fail_slow"));

  NamedResult slow = run_report("fcfs | detect 30m", 1);
  Summary& s = slow.result.summary;
  s.fail_slow = true;
  s.stragglers = 7;
  s.stragglers_detected = 6;
  s.slow_gpu_h = 42;
  s.slow_pace_gpu_h = 30;
  s.failure_lost_gpu_h = 123;
  runs.push_back(slow);
  const std::string table = render_table(runs);
  EXPECT_NE(table.find("stragglers (detected)"), std::string::npos) << table;
  EXPECT_NE(table.find("7 (6)"), std::string::npos) << table;
  EXPECT_NE(table.find("lost GPU-h: slow GPUs"), std::string::npos) << table;
  EXPECT_NE(table.find("123"), std::string::npos) << table;
  // After the total it splits.
  EXPECT_LT(table.find("lost GPU-hours"), table.find("lost GPU-h: slow GPUs"));
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["fail_slow"]["stragglers"], 7);
  EXPECT_EQ(j["fail_slow"]["lost_gpu_h"]["total"], 42.0);
  EXPECT_EQ(j["fail_slow"]["lost_gpu_h"]["pace"], 30.0);
  EXPECT_EQ(j["fail_slow"]["failures_lost_gpu_h"], 123.0);
}

}  // namespace
}  // namespace cardiac::sim
