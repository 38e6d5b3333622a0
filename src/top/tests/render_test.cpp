// SPDX-License-Identifier: Apache-2.0
// Whole frames: exact rows worked out by hand, the gpu-lost scenario's status document, and
// every size from tiny to wide giving lines of exactly the terminal's width.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "top/render.h"

namespace cardiac::top {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

Snapshot one_gpu() {
  Snapshot s;
  s.host = "gpu-node-01";
  s.source = "local sample";
  s.verdict = "WARN";
  GpuInfo g;
  g.index = 1;
  g.name = "H100 80GB HBM3";
  g.verdict = "WARN";
  g.reasons.push_back({"WARN", "hw_thermal_slowdown", "HW thermal slowdown at 88 °C"});
  g.util = 97;
  g.mem_used = 40 * kGiB;
  g.mem_total = 80 * kGiB;
  g.temp = 88;
  g.temp_slowdown = 87;
  g.power = 478;
  g.power_limit = 700;
  g.throttle = std::vector<std::string>{"hw_thermal"};
  s.gpus.push_back(g);
  return s;
}

std::vector<std::string> lines(const Frame& f) {
  std::vector<std::string> out;
  for (const auto& l : f.lines) out.push_back(l.text());
  return out;
}

TEST(Render, GpuRowAtEightyColumns) {
  Snapshot s = one_gpu();
  History h;
  h.add(1, Metric::kUtil, 1, 0);
  h.add(1, Metric::kUtil, 2, 50);
  h.add(1, Metric::kUtil, 3, 100);
  auto l = lines(render(s, h, ViewState{}, {80, 24, true, 0, 1.0}));
  ASSERT_EQ(l.size(), 24u);
  EXPECT_EQ(l[2],
            "GPU UTIL      HISTORY    MEM       TEMP/SLOW    POWER/LIMIT    STAT REASON      ");
  // util 97 % of 4 cells = 31 eighths; memory 40 of 80 GiB; 88 of 87 °C clamps to full;
  // 478 of 700 W = 21.9 eighths → 22: two cells and 6/8; the reason cut to 12 columns.
  EXPECT_EQ(l[3],
            "  1 ███▉  97%        ▁▅█ ██░░  50% ████  88/87C ██▊░  478/700W WARN HW thermal …");
  // The detail of the selected GPU below the table.
  EXPECT_EQ(l[5].substr(0, l[5].find("  WARN")), "GPU 1 · H100 80GB HBM3");
  EXPECT_NE(l[8].find("  util  "), std::string::npos);
  EXPECT_NE(l[8].find("▁▅█ 97%"), std::string::npos);
}

TEST(Render, AsciiWithoutUtf8) {
  Snapshot s = one_gpu();
  auto l = lines(render(s, History{}, ViewState{}, {80, 24, false, 0, 1.0}));
  EXPECT_EQ(l[3],
            "  1 ####  97%            ##..  50% ####  88/87C ###.  478/700W WARN HW thermal ~");
}

TEST(Render, WideTerminalShowsNameAndThrottle) {
  // 130 columns: every column, and REASON 12 + 24 spare.
  auto l = lines(render(one_gpu(), History{}, ViewState{}, {130, 24, true, 0, 1.0}));
  EXPECT_NE(l[2].find("NAME"), std::string::npos);
  EXPECT_NE(l[2].find("THROTTLE"), std::string::npos);
  EXPECT_NE(l[3].find("H100 80GB HBM3 "), std::string::npos);
  EXPECT_NE(l[3].find("hw_thermal"), std::string::npos);
  EXPECT_NE(l[3].find("HW thermal slowdown at 88 °C"), std::string::npos);
}

Snapshot gpu_lost() {
  std::ifstream in(std::string(CARDIAC_FIXTURES_DIR) + "/golden/status/gpu-lost.json");
  return from_status_json(nlohmann::json::parse(in));
}

TEST(Render, LostGpuReadsAsLost) {
  Snapshot s = gpu_lost();
  ASSERT_EQ(s.gpus.size(), 8u);
  EXPECT_EQ(s.host, "gpu-node-01");
  EXPECT_EQ(s.gpus[5].health, "lost");
  auto l = lines(render(s, History{}, ViewState{}, {80, 24, true, 0, 1.0}));
  // Rows 3..10 are GPUs 0..7; GPU 5's readings are one cell saying why.
  EXPECT_EQ(l[8].substr(0, 10), "  5 lost: ");
  EXPECT_NE(l[8].find("FAIL lost from t…"), std::string::npos) << l[8];
  EXPECT_NE(l[4].find(" OK "), std::string::npos);
}

TEST(Render, EverySizeGivesWholeLines) {
  Snapshot s = gpu_lost();
  History h;
  h.record(s);
  for (View view : {View::kGpus, View::kProcesses, View::kAlerts, View::kQueue}) {
    ViewState v;
    v.view = view;
    for (std::size_t w : {1, 10, 20, 40, 79, 80, 81, 106, 200}) {
      for (std::size_t ht : {1, 2, 3, 5, 12, 24, 60}) {
        for (bool utf8 : {true, false}) {
          Frame f = render(s, h, v, {w, ht, utf8, 0, 1.0});
          ASSERT_EQ(f.lines.size(), ht) << w << "x" << ht;
          for (const auto& line : f.lines) {
            ASSERT_EQ(display_width(line.text()), w) << w << "x" << ht << ": " << line.text();
          }
        }
      }
    }
  }
}

TEST(Render, ProcessesAlertsAndQueue) {
  Snapshot s = gpu_lost();
  ViewState v;
  v.view = View::kProcesses;
  auto l = lines(render(s, History{}, v, {80, 24, true, 0, 1.0}));
  EXPECT_EQ(l[2].substr(0, 30), "GPU      PID USER       JOB   ");
  EXPECT_NE(l[3].find("python3"), std::string::npos);
  v.view = View::kAlerts;
  l = lines(render(s, History{}, v, {80, 24, true, 0, 1.0}));
  EXPECT_NE(l[3].find("alerts are kept by the agent"), std::string::npos);
  s.alerts = alerts_from_json(nlohmann::json::parse(R"([
    {"id": 3, "rule": "gpu_lost", "severity": "critical", "state": "firing",
     "labels": {"gpu": "5"}, "description": "GPU 5 lost", "fired_ns": 1000000000},
    {"id": 4, "rule": "old", "severity": "warning", "state": "resolved"}])"));
  l = lines(render(s, History{}, v, {80, 24, true, 61'000'000'000, 1.0}));
  EXPECT_EQ(l[3].substr(0, 49), "critical firing     1m 00s   5 gpu_lost          ");
  EXPECT_NE(l[1].find("3 Alerts (1)"), std::string::npos);
  v.view = View::kQueue;
  s.jobs = jobs_from_json(nlohmann::json::parse(R"({"jobs": [
    {"id": 7, "user": "alice", "name": "train", "state": "running", "gpus": 2, "priority": 0,
     "gpu_indices": [0, 1], "start_ns": 1000000000},
    {"id": 8, "user": "bob", "name": "eval", "state": "pending", "gpus": 1, "priority": 0,
     "reason": "", "why": "waiting for 1 GPU", "submit_ns": 2000000000}]})"));
  l = lines(render(s, History{}, v, {80, 24, true, 61'000'000'000, 1.0}));
  EXPECT_NE(l[3].find("GPU 0,1"), std::string::npos);
  EXPECT_NE(l[4].find("waiting for 1 GPU"), std::string::npos);
  v.filter = "bob";
  l = lines(render(s, History{}, v, {80, 24, true, 61'000'000'000, 1.0}));
  EXPECT_NE(l[3].find("eval"), std::string::npos);
  EXPECT_EQ(l[4].find("train"), std::string::npos);
}

TEST(Render, ManyGpusScrollAndKeepTheDetail) {
  Snapshot s;
  for (unsigned i = 0; i < 16; ++i) {
    GpuInfo g;
    g.index = i;
    g.verdict = "OK";
    s.gpus.push_back(g);
  }
  ViewState v;
  v.selected[0] = 12;
  // 24 lines: title, tabs, keys, the column header leave 20; the detail keeps 6 and a blank
  // line, so 13 GPU rows show: 0..12 with GPU 12 selected at the bottom.
  auto l = lines(render(s, History{}, v, {80, 24, true, 0, 1.0}));
  EXPECT_EQ(l[3].substr(0, 3), "  0");
  EXPECT_EQ(l[15].substr(0, 3), " 12");
  EXPECT_EQ(l[17].substr(0, 6), "GPU 12");
  v.selected[0] = 15;  // the last: the table scrolls by three
  l = lines(render(s, History{}, v, {80, 24, true, 0, 1.0}));
  EXPECT_EQ(l[3].substr(0, 3), "  3");
  EXPECT_EQ(l[15].substr(0, 3), " 15");
}

TEST(Snapshot, OddDocumentsAreReadWithoutThrowing) {
  Snapshot s;
  EXPECT_NO_THROW(s = from_status_json(nlohmann::json::parse(R"({
    "verdict": "FAIL", "nvml": {"available": "no"},
    "gpus": [{"index": "x", "reasons": 5, "processes": [{"pid": "1"}, 7],
              "clock_event_reason_names": [1, "gpu_idle"], "utilization_gpu": "97"}]})")));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].index, 0u);
  EXPECT_FALSE(s.gpus[0].util.has_value());
  EXPECT_TRUE(s.gpus[0].idle);
  ASSERT_EQ(s.gpus[0].processes.size(), 1u);
  EXPECT_EQ(s.gpus[0].processes[0].pid, 0u);
  std::vector<AlertInfo> alerts;
  EXPECT_NO_THROW(alerts = alerts_from_json(nlohmann::json::parse(
                      R"([{"state": "firing", "silenced": "yes", "labels": {"gpu": 7}}, 3])")));
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].gpu, 7u);
  EXPECT_FALSE(alerts[0].silenced);
  EXPECT_TRUE(jobs_from_json(nlohmann::json::parse(R"({"jobs": 3})")).empty());
  EXPECT_EQ(blocked_from_json(nlohmann::json::parse(R"({"blocked": null})")), "");
}

TEST(History, KeepsTimeOrderAndItsCapacity) {
  History h(3);
  h.add(0, Metric::kUtil, 10, 1);
  h.add(0, Metric::kUtil, 10, 2);  // the same sample read again
  h.add(0, Metric::kUtil, 5, 3);   // older
  h.add(0, Metric::kUtil, 20, std::nullopt);
  h.add(0, Metric::kUtil, 30, 4);
  h.add(0, Metric::kUtil, 40, 5);
  auto v = h.values(0, Metric::kUtil);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_FALSE(v[0].has_value());
  EXPECT_EQ(v[1], 4);
  EXPECT_EQ(v[2], 5);
  EXPECT_TRUE(h.values(1, Metric::kUtil).empty());
}

}  // namespace
}  // namespace cardiac::top
