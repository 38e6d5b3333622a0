// SPDX-License-Identifier: Apache-2.0
// The fleet screen of `cardiac top --fleet` on hand-made views: node rows, verdict labels and
// colours, columns dropped at 80, a node Prometheus cannot scrape, expansion, read errors.
#include <gtest/gtest.h>

#include "top/fleet.h"
#include "top/text.h"

namespace cardiac::top {
namespace {

using fleet::Verdict;

constexpr double kFleetGiB = 1024.0 * 1024 * 1024;

fleet::FleetView three_nodes() {
  fleet::FleetView v;
  v.prometheus = "http://prom:9090";
  v.job = "cardiac";
  v.verdict = Verdict::kFail;
  fleet::FleetNode ok;
  ok.instance = "10.0.0.1:9847";
  ok.hostname = "gpu-a01";
  ok.scraped = true;
  ok.verdict = Verdict::kOk;
  for (int i = 0; i < 2; ++i) {
    fleet::FleetGpu g;
    g.index = i;
    g.verdict = Verdict::kOk;
    g.answering = true;
    g.utilization = 0.97;
    g.memory_used = 40 * kFleetGiB;
    g.memory_total = 80 * kFleetGiB;
    g.temperature = 61;
    g.power = 478;
    ok.gpus.push_back(g);
  }
  fleet::FleetNode lost = ok;
  lost.instance = "10.0.0.2:9847";
  lost.hostname = "gpu-a02";
  lost.verdict = Verdict::kFail;
  lost.reason = "1 of 2 GPUs not OK";
  lost.gpus[1].verdict = Verdict::kFail;
  lost.gpus[1].answering = false;
  lost.gpus[1].utilization.reset();
  lost.gpus[1].memory_used.reset();
  lost.gpus[1].temperature.reset();
  lost.gpus[1].power.reset();
  lost.gpus[1].xids = {{79, 1}};
  lost.gpus[1].last_xid = 79;
  lost.gpus[1].reason = "not answering NVML (lost, hung or needing a reset)";
  lost.alerts.push_back({"gpu_lost", "critical", "firing", "GPU 1 stopped answering NVML",
                         "2026-12-05T04:38:58Z", 1});
  fleet::FleetNode down;
  down.instance = "127.0.0.1:1";
  down.hostname = "127.0.0.1";
  down.scraped = false;
  down.scrape_error = "connection refused";
  down.verdict = Verdict::kUnknown;
  down.reason = "not scraped: connection refused";
  v.nodes = {ok, lost, down};
  return v;
}

FleetScreen screen_with(fleet::FleetView v) {
  FleetScreen s;
  s.prometheus = v.prometheus;
  s.job = v.job;
  s.view = std::move(v);
  s.waiting = false;
  s.read_at = 10 * kNsPerSec;
  return s;
}

std::vector<std::string> fleet_lines(const Frame& f) {
  std::vector<std::string> out;
  for (const auto& l : f.lines) out.push_back(l.text());
  return out;
}

// The style of the span whose text is `text` on the line that starts with `start`.
std::optional<Style> style_of(const Frame& f, const std::string& start, const std::string& text) {
  for (const auto& l : f.lines) {
    if (l.text().rfind(start, 0) != 0) continue;
    for (const auto& sp : l.spans) {
      if (sp.text.find(text) != std::string::npos) return sp.style;
    }
  }
  return std::nullopt;
}

RenderOptions at(std::size_t w, std::size_t h) {
  return {w, h, true, 12 * kNsPerSec, 2.0};
}

TEST(FleetScreen, NodeRowsAtEightyColumns) {
  FleetScreen sc = screen_with(three_nodes());
  FleetState st;
  st.selected = 2;  // no selection colours on the rows looked at
  auto l = fleet_lines(render_fleet(sc, st, at(80, 24)));
  ASSERT_EQ(l.size(), 24u);
  EXPECT_EQ(l[0].substr(0, l[0].find_last_not_of(' ') + 1),
            "cardiac top · fleet  FAIL · 3 nodes · 4 GPUs · job cardiac of http://prom:9090");
  EXPECT_EQ(l[1].substr(0, l[1].find("  read")), "nodes: 1 OK 0 WARN 1 FAIL 1 UNKNOWN");
  EXPECT_NE(l[1].find("read 2s ago"), std::string::npos);
  // INSTANCE dropped first; REASON takes the rest of the line.
  EXPECT_EQ(l[2],
            "NODE               VERDICT GPUS ALERTS  XIDS REASON                             ");
  EXPECT_EQ(l[3],
            "▸ gpu-a01          OK         2      0     0 OK                                 ");
  EXPECT_EQ(l[4],
            "▸ gpu-a02          FAIL       2      1     1 1 of 2 GPUs not OK                 ");
  EXPECT_EQ(l[5],
            "▸ 127.0.0.1        UNKNOWN    -      0     - not scraped: connection refused    ");
  for (const auto& line : l) EXPECT_EQ(display_width(line), 80u);
}

TEST(FleetScreen, WideTerminalShowsTheInstance) {
  FleetScreen sc = screen_with(three_nodes());
  auto l = fleet_lines(render_fleet(sc, FleetState{}, at(120, 24)));
  EXPECT_NE(l[2].find("INSTANCE"), std::string::npos);
  EXPECT_NE(l[4].find("10.0.0.2:9847"), std::string::npos);
  // Narrower still: the counts go too, the node, verdict and reason stay.
  l = fleet_lines(render_fleet(sc, FleetState{}, at(50, 24)));
  EXPECT_EQ(l[2].find("XIDS"), std::string::npos);
  EXPECT_NE(l[2].find("VERDICT"), std::string::npos);
  EXPECT_NE(l[2].find("REASON"), std::string::npos);
}

TEST(FleetScreen, VerdictsHaveTheirColoursAndUnknownIsNeverGreen) {
  EXPECT_STREQ(verdict_label(Verdict::kOk), "OK");
  EXPECT_STREQ(verdict_label(Verdict::kUnknown), "UNKNOWN");
  EXPECT_EQ(verdict_style(Verdict::kOk), Style::kOk);
  EXPECT_EQ(verdict_style(Verdict::kWarn), Style::kWarn);
  EXPECT_EQ(verdict_style(Verdict::kFail), Style::kFail);
  EXPECT_EQ(verdict_style(Verdict::kUnknown), Style::kWarn);
  FleetScreen sc = screen_with(three_nodes());
  FleetState st;
  st.selected = 0;
  Frame f = render_fleet(sc, st, at(80, 24));
  EXPECT_EQ(style_of(f, "▸ gpu-a02", "FAIL"), Style::kFail);
  EXPECT_EQ(style_of(f, "▸ 127.0.0.1", "UNKNOWN"), Style::kWarn);
  // The selected row is drawn in the selection's style as a whole.
  EXPECT_EQ(style_of(f, "▸ gpu-a01", "OK"), Style::kSelected);
}

TEST(FleetScreen, EnterExpandsANodeIntoItsGpusAndAlerts) {
  FleetScreen sc = screen_with(three_nodes());
  FleetState st;
  EXPECT_EQ(handle_fleet_key(st, sc, kKeyDown), Action::kRedraw);
  EXPECT_EQ(handle_fleet_key(st, sc, kKeyEnter), Action::kRedraw);
  auto l = fleet_lines(render_fleet(sc, st, at(80, 24)));
  EXPECT_EQ(l[4].substr(0, 11), "▾ gpu-a02");
  EXPECT_EQ(l[5],
            "    GPU VERDICT UTIL         MEM TEMP POWER XIDS       REASON                   ");
  EXPECT_EQ(l[6],
            "      0 OK       97%    40.0/80G  61C  478W -                                   ");
  EXPECT_EQ(l[7],
            "      1 FAIL       -           -    -     - 79x1       not answering NVML (lost…");
  EXPECT_EQ(l[8].substr(0, 44), "    alert gpu_lost [critical] GPU 1: GPU 1 s");
  EXPECT_EQ(l[9].substr(0, 13), "▸ 127.0.0.1");
  // Enter again folds it; `a` opens every node, and the down one says why it has no GPUs.
  handle_fleet_key(st, sc, kKeyEnter);
  EXPECT_EQ(fleet_lines(render_fleet(sc, st, at(80, 24)))[5].substr(0, 13), "▸ 127.0.0.1");
  handle_fleet_key(st, sc, 'a');
  l = fleet_lines(render_fleet(sc, st, at(80, 30)));
  bool said = false;
  for (const auto& line : l) said = said || line.find("    not scraped: connection refused") == 0;
  EXPECT_TRUE(said);
  handle_fleet_key(st, sc, 'a');
  EXPECT_TRUE(st.expanded.empty());
  EXPECT_EQ(handle_fleet_key(st, sc, 'q'), Action::kQuit);
}

TEST(FleetScreen, ReadErrorIsShownNeverAnEmptyList) {
  FleetScreen sc;
  sc.prometheus = "http://127.0.0.1:1";
  sc.job = "cardiac";
  sc.waiting = false;
  sc.error = "Prometheus at http://127.0.0.1:1: GET /api/v1/targets: connection refused";
  Frame f = render_fleet(sc, FleetState{}, at(100, 10));
  auto l = fleet_lines(f);
  EXPECT_EQ(l[0].rfind("cardiac top · fleet  UNKNOWN · job cardiac of http://127.0.0.1:1", 0), 0u)
      << l[0];
  EXPECT_EQ(l[1].rfind("Prometheus not read: Prometheus at http://127.0.0.1:1", 0), 0u) << l[1];
  EXPECT_EQ(style_of(f, "Prometheus not read", "connection refused"), Style::kFail);
  EXPECT_EQ(l[2].rfind("  no fleet view: ", 0), 0u) << l[2];
  EXPECT_EQ(l[2].find("NODE"), std::string::npos);
  // A later failure keeps the last view, marked stale with its age.
  sc = screen_with(three_nodes());
  sc.error = "no answer in time";
  l = fleet_lines(render_fleet(sc, FleetState{}, at(100, 10)));
  EXPECT_NE(l[0].find("fleet  FAIL (stale) · 3 nodes"), std::string::npos) << l[0];
  EXPECT_NE(l[1].find("(the view below is from 2s ago)"), std::string::npos);
  EXPECT_EQ(l[2].rfind("NODE", 0), 0u);
}

TEST(FleetScreen, EmptyJobSaysNoNodeWasLookedAt) {
  fleet::FleetView v;
  v.prometheus = "http://prom:9090";
  v.job = "cardiac";
  auto l = fleet_lines(render_fleet(screen_with(v), FleetState{}, at(80, 8)));
  EXPECT_NE(l[3].find("lists no target: no node was looked at"), std::string::npos);
}

TEST(FleetScreen, SelectionStaysOnScreenAndEverySizeGivesWholeLines) {
  fleet::FleetView v = three_nodes();
  const auto base = v.nodes;
  for (int i = 0; i < 40; ++i) {
    auto n = base[static_cast<std::size_t>(i % 3)];
    n.instance += std::to_string(i);
    v.nodes.push_back(n);
  }
  FleetScreen sc = screen_with(v);
  FleetState st;
  handle_fleet_key(st, sc, kKeyEnd);
  handle_fleet_key(st, sc, kKeyEnter);
  EXPECT_EQ(st.selected, v.nodes.size() - 1);
  auto l = fleet_lines(render_fleet(sc, st, at(80, 12)));
  bool shown = false;
  for (const auto& line : l) shown = shown || line.rfind("▾ ", 0) == 0;
  EXPECT_TRUE(shown);
  sc.view->nodes.resize(2);
  clamp_selection(st, sc);
  EXPECT_EQ(st.selected, 1u);
  for (std::size_t w = 1; w <= 140; w += 7) {
    for (std::size_t h = 1; h <= 40; h += 3) {
      Frame f = render_fleet(sc, st, {w, h, w % 2 == 0, 0, 1.0});
      ASSERT_EQ(f.lines.size(), h);
      for (const auto& line : f.lines) ASSERT_EQ(display_width(line.text()), w);
    }
  }
}

}  // namespace
}  // namespace cardiac::top
