// SPDX-License-Identifier: Apache-2.0
#include "serving/vram_book.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cardiac::serving {
namespace {

constexpr std::uint64_t kBookGiB = 1ULL << 30U;

nvml::GpuSnapshot snapshot(std::uint64_t used_by_pid) {
  nvml::GpuSnapshot s;
  s.available = true;
  nvml::GpuReading g;
  g.index = 2;
  g.uuid = "GPU-2";
  g.memory_total = 80 * kBookGiB;
  g.memory_used = used_by_pid + kBookGiB;
  g.memory_free = 80 * kBookGiB - *g.memory_used;
  nvml::GpuProcess p;
  p.pid = 4242;
  p.name = "python3";
  p.used_memory_bytes = used_by_pid;
  g.processes.push_back(p);
  g.processes_supported = true;
  s.gpus.push_back(g);
  return s;
}

TEST(VramBook, AGrowingProcessGetsATimeToOomAndIsThinnedToTheStep) {
  VramBook book;
  int reads = 0;
  auto cmdline = [&](std::uint32_t) {
    ++reads;
    return std::string("python3\0train.py", 16);
  };
  // 20 minutes at 1 s, growing 1 GiB per 100 s from 20 GiB.
  for (int t = 0; t <= 1200; ++t) {
    const auto used = 20 * kBookGiB + static_cast<std::uint64_t>(t) * kBookGiB / 100;
    book.add(snapshot(used), TimeNs{t} * kNsPerSec, cmdline);
  }
  EXPECT_EQ(reads, 1);
  ASSERT_EQ(book.tracks().size(), 1U);
  const auto& t = book.tracks().begin()->second;
  EXPECT_EQ(t.cmdline, "python3 train.py");
  EXPECT_EQ(t.points.size(), 81U);  // one per 15 s
  ASSERT_TRUE(t.seconds_to_oom);
  // At t = 1200: 32 GiB held, 47 GiB free, growing 1 GiB per 100 s → 4700 s.
  EXPECT_NEAR(*t.seconds_to_oom, 4700, 50);
  EXPECT_FALSE(t.preallocated);

  // Saved and read back: the same points.
  auto back = tracks_from_json(book.to_json(), "test");
  ASSERT_TRUE(back) << back.error().what();
  ASSERT_EQ(back->size(), 1U);
  EXPECT_EQ((*back)[0].points, t.points);
  VramBook again;
  ASSERT_TRUE(again.from_json(book.to_json(), 1200 * kNsPerSec, "test"));
  ASSERT_TRUE(again.tracks().begin()->second.seconds_to_oom);

  // The process goes away: its track is dropped.
  nvml::GpuSnapshot empty = snapshot(0);
  empty.gpus[0].processes.clear();
  book.add(empty, 1300 * kNsPerSec, cmdline);
  EXPECT_TRUE(book.tracks().empty());
}

TEST(VramBook, AnEngineAtAFlatHighLevelIsPreallocated) {
  VramBook book;
  auto cmdline = [](std::uint32_t) { return std::string("vllm serve m"); };
  for (int t = 0; t <= 1200; t += 15) {
    book.add(snapshot(72 * kBookGiB), TimeNs{t} * kNsPerSec, cmdline);
  }
  const auto& t = book.tracks().begin()->second;
  EXPECT_TRUE(t.preallocated);
  EXPECT_FALSE(t.seconds_to_oom);
  ASSERT_TRUE(t.engine);
  EXPECT_EQ(t.engine->engine, "vLLM");
}

TEST(VramBook, BadDocumentsAreRefusedWithWhere) {
  EXPECT_FALSE(tracks_from_json(nlohmann::json::object(), "f"));
  auto j = nlohmann::json::parse(
      R"({"format":"cardiac.gpu-processes/v1","processes":[{"gpu":0,"pid":1,"points":[[5,1],[1,2]]}]})");
  auto r = tracks_from_json(j, "f");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("processes[0]"), std::string::npos) << r.error().what();
}

}  // namespace
}  // namespace cardiac::serving
