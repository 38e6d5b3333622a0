// SPDX-License-Identifier: Apache-2.0
#include "failstats/file_format.h"

#include <gtest/gtest.h>

namespace cardiac::failstats {
namespace {

constexpr DurationNs kFormatHour = 3600 * kNsPerSec;

FailureStats sample() {
  std::vector<IncidentRecord> list = {
      {FaultClass::kGpuLost, 0, 3 * kFormatHour, "GPU-aaaa", "node1"},
      {FaultClass::kGpuMemory, 5 * kFormatHour, std::nullopt, "GPU-bbbb", "node1"},
      {FaultClass::kNetwork, 7 * kFormatHour, 9 * kFormatHour, "", "node2"},
  };
  auto s = tabulate(list, {{"node1", 8, 80}, {"node2", 8, 80}}, 0, 240 * kFormatHour);
  EXPECT_TRUE(s);
  s->sources.push_back("test");
  return *s;
}

TEST(FileFormat, WritesTheRawCountsAndReadsThemBackExactly) {
  FailureStats s = sample();
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["format"], "cardiac.failure-stats/v1");
  EXPECT_EQ(j["exposure"]["gpu_days"], 160.0);
  EXPECT_EQ(j["exposure"]["nodes"], 2);
  EXPECT_EQ(j["classes"]["gpu_lost"]["count"], 1);
  EXPECT_EQ(j["classes"]["gpu_lost"]["repair"]["n"], 1);
  EXPECT_EQ(j["open_incidents"], 1);
  EXPECT_EQ(j["derived"]["overall"]["count"], 3);
  EXPECT_TRUE(j["derived"]["classes"]["thermal"]["mtbi_hours"].is_null());  // no incident: inf
  auto back = parse_stats(j.dump(), "x.json");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->counts, s.counts);
  EXPECT_EQ(back->gpu_days, s.gpu_days);
  EXPECT_EQ(back->gpus, s.gpus);
  EXPECT_EQ(back->open, 1u);
  EXPECT_EQ(back->window_end, 240 * kFormatHour);
  EXPECT_EQ(back->nodes.size(), 2u);
  EXPECT_EQ(back->gpu_list.size(), 2u);
  EXPECT_EQ(to_json(*back), j);  // nothing lost
}

TEST(FileFormat, TwoFilesMergeIntoTheirSum) {
  FailureStats a = sample();
  auto b = parse_stats(to_json(sample()).dump(), "b.json");
  ASSERT_TRUE(b);
  for (auto& n : b->nodes) n.node += "-b";
  for (auto& g : b->gpu_list) g.node += "-b";
  merge_into(a, *b);
  EXPECT_EQ(a.gpu_days, 320);
  EXPECT_EQ(a.gpus, 32u);
  EXPECT_EQ(total(a.counts), 6u);
  EXPECT_EQ(a.nodes.size(), 4u);
  EXPECT_EQ(a.repairs[static_cast<std::size_t>(FaultClass::kGpuLost)].n, 2u);
}

// The times are optional: statistics read without them are written without them, and read
// back (fuzz/crashes-found/failstats-…).
TEST(FileFormat, RepairsWithoutTheirTimesAreWrittenWithoutThemAndReadBack) {
  nlohmann::json j = to_json(sample());
  j["classes"]["gpu_lost"]["repair"].erase("hours");
  auto s = parse_stats(j.dump(), "a.json");
  ASSERT_TRUE(s) << s.error().what();
  const auto lost = static_cast<std::size_t>(FaultClass::kGpuLost);
  EXPECT_EQ(s->repairs[lost].n, 1u);
  EXPECT_TRUE(s->repairs[lost].hours.empty());
  nlohmann::json written = to_json(*s);
  EXPECT_FALSE(written["classes"]["gpu_lost"]["repair"].contains("hours"));
  EXPECT_EQ(written["classes"]["network"]["repair"]["hours"], nlohmann::json::array({2.0}));
  auto back = parse_stats(written.dump(), "b.json");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(to_json(*back), written);
}

TEST(FileFormat, BadInputNamesTheFileAndTheField) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto r = parse_stats(text, "f.json");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().what().find("f.json"), std::string::npos) << r.error().what();
    EXPECT_NE(r.error().what().find(needle), std::string::npos) << r.error().what();
  };
  nlohmann::json good = to_json(sample());
  expect_error("{", "not JSON");
  auto with = [&](const nlohmann::json::json_pointer& at, nlohmann::json v) {
    nlohmann::json j = good;
    j[at] = std::move(v);
    return j.dump();
  };
  using P = nlohmann::json::json_pointer;
  expect_error(with(P("/format"), "cardiac.failure-stats/v9"), "format");
  expect_error(with(P("/exposure/gpu_days"), -1), "exposure.gpu_days");
  expect_error(with(P("/classes/gpu_lost/count"), 1.5), "classes.gpu_lost.count");
  expect_error(with(P("/classes/gpu_melted"), good["classes"]["gpu_lost"]), "classes.gpu_melted");
  expect_error(with(P("/classes/gpu_lost/repair/hours"), nlohmann::json::array()),
               "classes.gpu_lost.repair.hours");
  expect_error(with(P("/nodes/1/counts/gpu_lost"), "x"), "nodes[1].counts.gpu_lost");
  nlohmann::json no_window = good;
  no_window.erase("window");
  expect_error(no_window.dump(), "window");
}

TEST(FileFormat, CsvHasOneRowPerClassAndTheOverallRow) {
  std::string csv = to_csv(sample(), By::kClass);
  EXPECT_EQ(csv.rfind("by,key,title,count,gpu_days,per_1000_gpu_days,", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 8 + 1);
  EXPECT_NE(csv.find("class,gpu_lost,GPU lost / off the bus,1,160,6.25,"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\nall,all,All classes,3,"), std::string::npos);
  std::string nodes = to_csv(sample(), By::kNode);
  EXPECT_NE(nodes.find("\nnode,node2,,1,80,"), std::string::npos) << nodes;
  std::string gpus = to_csv(sample(), By::kGpu);
  EXPECT_NE(gpus.find("\ngpu,GPU-aaaa,node1,1,10,"), std::string::npos) << gpus;
}

}  // namespace
}  // namespace cardiac::failstats
