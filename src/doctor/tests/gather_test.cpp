// SPDX-License-Identifier: Apache-2.0
// gather(): captured snapshot series, per-thread CPU of GPU holders, and an agent store's
// samples, history and events turned back into the doctor's input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/tests/temp_dir.h"
#include "doctor/checks/checks.h"
#include "doctor/live/gather.h"
#include "serving/vram_book.h"
#include "store/events.h"
#include "store/schema.h"
#include "store/writer.h"

namespace cardiac::doctor {
namespace {

const std::string kIowait = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/iowait-bottleneck";
const std::string kHost8x = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x";
constexpr TimeNs kNow = 1700000100000000000;

TEST(Gather, SnapshotSeriesIsRecognised) {
  auto series = snapshot_series(kIowait);
  ASSERT_EQ(series.size(), 2U);
  EXPECT_EQ(series[0], kIowait + "/t0");
  EXPECT_TRUE(snapshot_series(kHost8x).empty());  // one tree, not a series
}

TEST(Gather, OfflineSeriesGivesRatesAndSaysWhatWasSkipped) {
  ManualClock clock(kNow);
  GatherOptions o;
  o.offline = true;
  o.root = kIowait;
  std::vector<std::string> skipped;
  auto in = gather(o, clock, {}, {}, skipped);
  ASSERT_TRUE(in) << in.error().what();
  ASSERT_EQ(in->host_samples.size(), 2U);
  EXPECT_EQ(in->host_samples[0].taken_at, 1700000000000000000);  // from .cardiac/taken_at
  ASSERT_TRUE(in->rates);
  EXPECT_DOUBLE_EQ(in->rates->interval_s, 1.0);
  ASSERT_TRUE(in->rates->cpu.total);
  EXPECT_NEAR(in->rates->cpu.total->iowait.value_or(0), 45.0, 0.5);
  EXPECT_TRUE(in->gpu_samples.empty());
  bool said_gpu = false;
  bool said_kmsg = false;
  for (const auto& s : skipped) {
    said_gpu |= s.starts_with("gpu:");
    said_kmsg |= s.starts_with("kernel log:");
  }
  EXPECT_TRUE(said_gpu);
  EXPECT_TRUE(said_kmsg);
}

// Offline on captured files, the input is a function of the files: the run's clock never
// enters it. The time is the capture's own; a --kmsg file's monotonic stamps are dated by the
// captured tree's btime, and left undated without a captured tree.
TEST(Gather, OfflineInputTakesNoTimeFromThisMachine) {
  const std::string dmesg =
      std::string(CARDIAC_FIXTURES_DIR) + "/kmsg/xid79-aer-surprise-down.dmesg";
  for (TimeNs now : {kNow, kNow + 400 * 24 * 3600 * kNsPerSec}) {
    ManualClock clock(now);
    std::vector<std::string> skipped;
    GatherOptions series;
    series.offline = true;
    series.root = kIowait;
    auto a = gather(series, clock, {}, {}, skipped);
    ASSERT_TRUE(a) << a.error().what();
    EXPECT_EQ(a->now, 1700000001000000000);  // t1/.cardiac/taken_at

    GatherOptions tree;
    tree.offline = true;
    tree.root = kHost8x;  // no .cardiac/taken_at: no time at all
    tree.kmsg_file = dmesg;
    auto b = gather(tree, clock, {}, {}, skipped);
    ASSERT_TRUE(b) << b.error().what();
    EXPECT_EQ(b->now, 0);
    EXPECT_EQ(b->host_samples.back().taken_at, 0);
    ASSERT_FALSE(b->events.empty());
    const auto& e = b->events.back();
    ASSERT_TRUE(e.monotonic_us);
    // btime 1796229247 in the tree's proc/stat.
    EXPECT_EQ(e.time_ns, 1796229247 * kNsPerSec + *e.monotonic_us * 1000);
    ASSERT_TRUE(b->kmsg_read);
    EXPECT_EQ(b->kmsg_read->lines, b->kmsg_read->log_lines);
  }
}

TEST(Gather, ProcessActivityPerThread) {
  RootFs t0(kIowait + "/t0");
  RootFs t1(kIowait + "/t1");
  auto acts = process_activity(t0, t1, {51820, 99999}, 1.0);
  ASSERT_EQ(acts.size(), 2U);
  const auto& p = acts[0];
  EXPECT_EQ(p.pid, 51820U);
  EXPECT_TRUE(p.exists);
  EXPECT_DOUBLE_EQ(p.cpu_percent, 15.0);  // 15 jiffies in 1 s at USER_HZ 100
  ASSERT_EQ(p.threads.size(), 2U);
  EXPECT_EQ(p.threads[0].comm, "python3");
  EXPECT_DOUBLE_EQ(p.threads[0].cpu_percent, 12.0);
  EXPECT_EQ(p.threads[1].comm, "pt_pin_memory");
  EXPECT_FALSE(acts[1].exists);
}

TEST(Gather, BadInputNamesThePath) {
  ManualClock clock(kNow);
  std::vector<std::string> skipped;
  GatherOptions o;
  o.offline = true;
  o.root = "/nonexistent-root";
  auto r = gather(o, clock, {}, {}, skipped);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("/nonexistent-root"), std::string::npos);

  cardiac::testing::TempDir tmp;
  std::string junk = tmp.file("not-a-store.db");
  std::ofstream(junk) << "this is not SQLite\n";
  o.root = kHost8x;
  o.db = junk;
  r = gather(o, clock, {}, {}, skipped);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find(junk), std::string::npos) << r.error().what();
}

// An agent store with three samples of a GPU over its slowdown temperature and the kernel's
// Xid 79 line: an offline doctor run on it finds both without any live source.
TEST(Gather, AgentStoreGivesSamplesHistoryAndEvents) {
  cardiac::testing::TempDir tmp;
  std::string path = tmp.file("store.db");
  {
    auto db = store::open_store(path);
    ASSERT_TRUE(db) << db.error().what();
    store::SampleWriter w(*db);
    for (int i = 0; i < 3; ++i) {
      nvml::GpuSnapshot s;
      s.available = true;
      nvml::GpuReading g;
      g.index = 1;
      g.temperature = 89;
      g.temperature_slowdown = 87;
      g.temperature_shutdown = 92;
      g.utilization_gpu = 97;
      g.clock_event_reasons = 0x40;
      s.gpus.push_back(g);
      TimeNs at = kNow - (3 - i) * kNsPerSec;
      ASSERT_TRUE(w.add_gpus(s, at));
    }
    ASSERT_TRUE(w.flush());
    std::string line =
        "[1084456.074562] NVRM: Xid (PCI:0000:2a:00): 79, pid=0, GPU has fallen off the bus.";
    store::Event e;
    e.time_ns = kNow - 2 * kNsPerSec;
    e.kind = "xid";
    e.xid = 79;
    e.pci_bus_id = "0000:2a:00.0";
    e.message = "GPU has fallen off the bus.";
    e.source = "/dev/kmsg";
    e.dedup_key = std::to_string(e.time_ns) + "|xid|" + line;
    ASSERT_TRUE(store::insert_event(*db, e));
  }
  ManualClock clock(kNow);
  GatherOptions o;
  o.offline = true;
  o.root = kHost8x;
  o.db = path;
  std::vector<std::string> skipped;
  auto in = gather(o, clock, {}, {}, skipped);
  ASSERT_TRUE(in) << in.error().what();
  ASSERT_EQ(in->gpu_samples.size(), 3U);
  EXPECT_EQ(in->gpu_samples[0].gpus.at(0).temperature, 89U);
  ASSERT_EQ(in->events.size(), 1U);
  EXPECT_EQ(in->events[0].xid, 79);
  EXPECT_EQ(in->events[0].pid, 0);  // classified again from the stored line
  EXPECT_EQ(in->events[0].time_ns, kNow - 2 * kNsPerSec);
  ASSERT_FALSE(in->history.empty());
  EXPECT_EQ(in->history[0].series.at(0).first, "temperature");

  Report r = diagnose(*in);
  bool thermal = false;
  bool xid = false;
  for (const auto& f : r.findings) {
    thermal |= f.id.starts_with("gpu.thermal") && f.gpu.index == 1U;
    xid |= f.id == "xid.79";
  }
  EXPECT_TRUE(thermal);
  EXPECT_TRUE(xid);
}

// The agent's per-process book beside its store: the doctor reads it with --db and projects the
// growing process's time to out-of-memory; a damaged book is skipped with a note.
TEST(Gather, AgentProcessBookGivesTheVramGrowthFinding) {
  cardiac::testing::TempDir tmp;
  std::string path = tmp.file("store.db");
  ASSERT_TRUE(store::open_store(path));
  serving::VramBook book;
  for (int t = -1200; t <= 0; t += 15) {
    nvml::GpuSnapshot s;
    s.available = true;
    nvml::GpuReading g;
    g.index = 3;
    g.memory_total = 80ULL << 30U;
    const auto used = (20ULL << 30U) + static_cast<std::uint64_t>(t + 1200) * (1ULL << 30U) / 60;
    g.memory_used = used;
    g.memory_free = *g.memory_total - used;
    g.processes.push_back(
        {.pid = 777, .used_memory_bytes = used, .name = "python3", .type = "compute"});
    s.gpus.push_back(g);
    book.add(s, kNow + t * kNsPerSec, {});
  }
  std::ofstream(tmp.file("gpu-processes.json")) << book.to_json().dump();
  ManualClock clock(kNow);
  GatherOptions o;
  o.offline = true;
  o.root = kHost8x;
  o.db = path;
  std::vector<std::string> skipped;
  auto in = gather(o, clock, {}, {}, skipped);
  ASSERT_TRUE(in) << in.error().what();
  ASSERT_EQ(in->process_vram.size(), 1U);
  EXPECT_EQ(in->process_vram[0].pid, 777U);
  EXPECT_EQ(in->process_vram[0].points.size(), 81U);
  Report r = diagnose(*in);
  auto it = std::find_if(r.findings.begin(), r.findings.end(),
                         [](const Finding& f) { return f.id == "serving.vram_growth"; });
  ASSERT_NE(it, r.findings.end());
  EXPECT_EQ(it->gpu.index, 3U);
  EXPECT_NE(it->title.find("process 777"), std::string::npos) << it->title;

  std::ofstream(tmp.file("gpu-processes.json"), std::ios::trunc) << "{\"format\": 1";
  skipped.clear();
  in = gather(o, clock, {}, {}, skipped);
  ASSERT_TRUE(in) << in.error().what();
  EXPECT_TRUE(in->process_vram.empty());
  EXPECT_TRUE(std::any_of(skipped.begin(), skipped.end(),
                          [](const std::string& s) { return s.starts_with("serving: "); }));
}

}  // namespace
}  // namespace cardiac::doctor
