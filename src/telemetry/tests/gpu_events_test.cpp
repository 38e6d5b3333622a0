// SPDX-License-Identifier: Apache-2.0
// NVML's events through the one NVML worker: its event thread waits on the fake library's event
// set while the sampling thread goes on, and the collector hands the events over with the
// samples.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "telemetry/tests/support.h"

namespace cardiac::telemetry {
namespace {

using testing::fake_options;
using testing::load_scenario;
using testing::TempScenario;

// This process's children that are NVML workers: their command lines (NULs as spaces).
std::vector<std::string> nvml_workers() {
  std::vector<std::string> found;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid = 0; children >> pid;) {
      std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
      std::stringstream text;
      text << cmdline.rdbuf();
      std::string line = text.str();
      std::replace(line.begin(), line.end(), '\0', ' ');
      if (line.find(kWorkerSubcommand) != std::string::npos) found.push_back(line);
    }
  }
  return found;
}

nlohmann::json with_events() {
  auto scenario = load_scenario("healthy-8xh100.json");
  scenario["events"] = {{{"at", 0.0}, {"device", 2}, {"type", "xid"}, {"data", 79}},
                        {{"at", 0.0}, {"device", 5}, {"type", "dbe"}}};
  return scenario;
}

// Samples until `want` events have come (the event thread registers the GPUs beside the first
// samples); bounded, so a worker that never sends them fails the test instead of hanging it.
std::vector<GpuEvent> sample_for_events(GpuCollector& c, std::size_t want) {
  std::vector<GpuEvent> got;
  for (int i = 0; i < 1000 && got.size() < want; ++i) {
    EXPECT_TRUE(c.sample().available);
    for (auto& e : c.take_events()) got.push_back(std::move(e));
    if (got.size() < want) usleep(10 * 1000);
  }
  return got;
}

TEST(GpuEvents, ComeWithTheSamplesFromTheSameWorker) {
  TempScenario file(with_events());
  ManualClock clock;
  auto options = fake_options(file.path(), 5 * kNsPerSec);
  options.events = true;
  GpuCollector c(options, clock);
  auto first = c.sample();
  ASSERT_TRUE(first.available) << first.error;
  auto events = sample_for_events(c, 2);
  ASSERT_EQ(events.size(), 2u);
  std::sort(events.begin(), events.end(),
            [](const GpuEvent& a, const GpuEvent& b) { return a.gpu < b.gpu; });
  EXPECT_EQ(events[0].gpu, 2u);
  EXPECT_EQ(events[0].kind, GpuEventKind::kXid);
  EXPECT_EQ(events[0].xid, 79);
  EXPECT_EQ(events[0].pci_bus_id, first.gpus[2].pci_bus_id);
  EXPECT_GT(events[0].time_ns, 0);
  EXPECT_EQ(events[1].gpu, 5u);
  EXPECT_EQ(events[1].kind, GpuEventKind::kDoubleBitEcc);
  EXPECT_FALSE(events[1].xid);
  // One process samples and waits for events: no second worker.
  auto workers = nvml_workers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_NE(workers[0].find("--events 1"), std::string::npos) << workers[0];
  EXPECT_EQ(c.stats().worker_starts, 1u);
  // Each event once.
  for (int i = 0; i < 5; ++i) c.sample();
  EXPECT_TRUE(c.take_events().empty());
}

TEST(GpuEvents, AnEventInjectedLaterArrivesWhileSamplingGoesOn) {
  auto scenario = load_scenario("healthy-8xh100.json");
  TempScenario file(scenario);
  ManualClock clock;
  auto options = fake_options(file.path(), 5 * kNsPerSec);
  options.events = true;
  GpuCollector c(options, clock);
  ASSERT_TRUE(c.sample().available);
  // The event thread now blocks in the fake's nvmlEventSetWait, as in the driver's; samples
  // are still answered.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.sample().gpus.size(), 8u);
  scenario["events"] = {{{"at", 0.0}, {"device", 7}, {"type", "xid"}, {"data", 48}}};
  file.write(scenario);
  auto events = sample_for_events(c, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu, 7u);
  EXPECT_EQ(events[0].xid, 48);
  EXPECT_EQ(c.stats().worker_starts, 1u);
}

TEST(GpuEvents, NoneAreFollowedUnlessAsked) {
  TempScenario file(with_events());
  ManualClock clock;
  GpuCollector c(fake_options(file.path(), 5 * kNsPerSec), clock);
  ASSERT_TRUE(c.sample().available);
  // The worker was not asked for events, so it starts no event thread to send any.
  auto workers = nvml_workers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].find("--events"), std::string::npos) << workers[0];
  EXPECT_TRUE(c.take_events().empty());
}

TEST(GpuEvents, TheWorkerLineForAnEventIsReadBack) {
  auto e = gpu_event_from_json(nlohmann::json::parse(
      R"({"type":"event","gpu":3,"pci_bus_id":"0000:5d:00.0","event":"xid","xid":79,"time_ns":7})"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->gpu, 3u);
  EXPECT_EQ(e->pci_bus_id, "0000:5d:00.0");
  EXPECT_EQ(e->kind, GpuEventKind::kXid);
  EXPECT_EQ(e->xid, 79);
  EXPECT_EQ(e->time_ns, 7);
  EXPECT_FALSE(gpu_event_from_json(nlohmann::json::parse(R"({"type":"lost"})")));
  EXPECT_FALSE(gpu_event_from_json(nlohmann::json::parse(R"({"type":"end"})")));
  // A malformed xid is left out rather than thrown on.
  auto odd = gpu_event_from_json(nlohmann::json::parse(R"({"type":"event","xid":"79"})"));
  ASSERT_TRUE(odd);
  EXPECT_FALSE(odd->xid);
}

}  // namespace
}  // namespace cardiac::telemetry
