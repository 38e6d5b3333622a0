// SPDX-License-Identifier: Apache-2.0
// Keys, sorting, filtering and the columns that fit, worked out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "top/layout.h"
#include "top/render.h"
#include "top/view.h"

namespace cardiac::top {
namespace {

std::vector<std::string> names(const std::vector<Column>& cols) {
  std::vector<std::string> out;
  for (const auto& c : cols) out.emplace_back(c.name);
  return out;
}

TEST(Columns, EightyColumnsDropNameAndThrottle) {
  // All: 3+14+9+10+9+12+14+10+4+12 = 97 plus 9 gaps = 106. Without NAME 91, without THROTTLE
  // too 80: it fits, and REASON keeps its minimum 12.
  auto cols = fit_columns(gpu_columns(), 80);
  EXPECT_EQ(names(cols), (std::vector<std::string>{"GPU", "UTIL", "HISTORY", "MEM", "TEMP/SLOW",
                                                   "POWER/LIMIT", "STAT", "REASON"}));
  EXPECT_EQ(cols.back().width, 12u);
}

TEST(Columns, WideTerminalsKeepAllAndWidenTheReason) {
  EXPECT_EQ(fit_columns(gpu_columns(), 106).size(), 10u);
  auto cols = fit_columns(gpu_columns(), 120);
  EXPECT_EQ(cols.size(), 10u);
  EXPECT_EQ(cols.back().width, 26u);  // 12 + the 14 spare
}

TEST(Columns, NarrowTerminalsKeepTheVerdict) {
  // 60: HISTORY (11 with its gap) and REASON (13) go too: 56.
  EXPECT_EQ(names(fit_columns(gpu_columns(), 60)),
            (std::vector<std::string>{"GPU", "UTIL", "MEM", "TEMP/SLOW", "POWER/LIMIT", "STAT"}));
  // 40: then POWER (15) and MEM (10): 31.
  EXPECT_EQ(names(fit_columns(gpu_columns(), 40)),
            (std::vector<std::string>{"GPU", "UTIL", "TEMP/SLOW", "STAT"}));
}

TEST(Columns, ProcessesFitAtEighty) {
  // 3+8+10+12+8+10+10 = 61 plus 6 gaps = 67: NAME gets 10 + 13.
  auto cols = fit_columns(process_columns(), 80);
  EXPECT_EQ(cols.size(), 7u);
  EXPECT_EQ(cols.back().width, 23u);
}

Snapshot three_gpus() {
  Snapshot s;
  for (unsigned i = 0; i < 3; ++i) {
    GpuInfo g;
    g.index = i;
    g.verdict = i == 2 ? "FAIL" : "OK";
    s.gpus.push_back(g);
  }
  s.gpus[0].util = 10;
  s.gpus[1].util = 90;  // GPU 2 reports none
  ProcessInfo p;
  p.gpu = 1;
  p.pid = 4243;
  p.name = "python3";
  p.user = "alice";
  p.job = "cardiac 7";
  s.gpus[1].processes.push_back(p);
  p.gpu = 2;
  p.pid = 5000;
  p.name = "vllm";
  p.user = "bob";
  p.job.clear();
  s.gpus[2].processes.push_back(p);
  return s;
}

std::vector<unsigned> order(const Snapshot& s, const ViewState& v) {
  std::vector<unsigned> out;
  for (const auto* g : gpu_rows(s, v)) out.push_back(g->index);
  return out;
}

TEST(Sort, KeysStepAndReverseWithMissingValuesLast) {
  Snapshot s = three_gpus();
  ViewState v;
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(handle_key(v, 's'), Action::kRedraw);  // util, largest first
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{1, 0, 2}));
  handle_key(v, 'S');  // util, smallest first; GPU 2 has none and stays last
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{0, 1, 2}));
  handle_key(v, kKeyLeft);  // back to gpu
  handle_key(v, kKeyLeft);  // wraps to verdict, worst first
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{2, 0, 1}));
}

TEST(Filter, ByIndexOrProcessText) {
  Snapshot s = three_gpus();
  ViewState v;
  v.filter = "1";
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{1}));
  v.filter = "0, 2";
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{0, 2}));
  v.filter = "ALICE";
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{1}));
  v.filter = "cardiac 7";
  EXPECT_EQ(order(s, v), (std::vector<unsigned>{1}));
  v.filter = "vllm";
  EXPECT_EQ(process_rows(s, v).size(), 1u);
  EXPECT_EQ(process_rows(s, v)[0]->pid, 5000u);
  v.filter = "nobody";
  EXPECT_TRUE(gpu_rows(s, v).empty());
}

TEST(Keys, FilterPromptTakesQAsText) {
  ViewState v;
  handle_key(v, '/');
  EXPECT_TRUE(v.editing);
  EXPECT_EQ(handle_key(v, 'q'), Action::kRedraw);  // typed, not quit
  handle_key(v, kKeyBackspace);
  for (int c : std::string("alice")) handle_key(v, c);
  handle_key(v, kKeyEnter);
  EXPECT_FALSE(v.editing);
  EXPECT_EQ(v.filter, "alice");
  handle_key(v, kKeyEscape);
  EXPECT_EQ(v.filter, "");
  EXPECT_EQ(handle_key(v, 'q'), Action::kQuit);
}

TEST(Keys, ViewsAndHelp) {
  ViewState v;
  handle_key(v, '\t');
  EXPECT_EQ(v.view, View::kProcesses);
  handle_key(v, '4');
  EXPECT_EQ(v.view, View::kQueue);
  handle_key(v, '\t');
  EXPECT_EQ(v.view, View::kGpus);
  handle_key(v, kKeyBackTab);
  EXPECT_EQ(v.view, View::kQueue);
  handle_key(v, 'h');
  EXPECT_TRUE(v.help);
  handle_key(v, 'x');  // any key closes the help
  EXPECT_FALSE(v.help);
  EXPECT_EQ(handle_key(v, 'x'), Action::kNone);
}

TEST(Keys, SelectionStaysInsideTheRows) {
  Snapshot s = three_gpus();
  ViewState v;
  handle_key(v, kKeyUp);
  EXPECT_EQ(v.selected[0], 0u);
  for (int i = 0; i < 5; ++i) handle_key(v, kKeyDown);
  clamp_selection(v, s);
  EXPECT_EQ(v.selected[0], 2u);
  handle_key(v, kKeyHome);
  EXPECT_EQ(v.selected[0], 0u);
  handle_key(v, kKeyEnd);
  clamp_selection(v, s);
  EXPECT_EQ(v.selected[0], 2u);
}

TEST(Snapshot, ProcStatusUid) {
  EXPECT_EQ(uid_from_proc_status("Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\n"), 1000u);
  EXPECT_EQ(uid_from_proc_status("Name:\tx\n"), std::nullopt);
  EXPECT_EQ(uid_from_proc_status("Uid:\tabc\n"), std::nullopt);
}

}  // namespace
}  // namespace cardiac::top
