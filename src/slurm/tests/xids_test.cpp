// SPDX-License-Identifier: Apache-2.0
#include "slurm/xids.h"

#include <gtest/gtest.h>

namespace cardiac::slurm {
namespace {

constexpr TimeNs kStart = 1796430000LL * kNsPerSec;
constexpr TimeNs kEnd = kStart + 60 * kNsPerSec;

nlohmann::json event(TimeNs t, int xid, std::string bus, std::optional<unsigned> gpu = {}) {
  nlohmann::json e{{"kind", "xid"}, {"time_ns", t}, {"xid", xid}, {"pci_bus_id", bus}};
  if (gpu) e["gpu"] = *gpu;
  return e;
}

// The agent's status, as far as the mapping reads it.
nlohmann::json status() {
  return {{"gpus",
           {{{"index", 0}, {"pci_bus_id", "00000000:18:00.0"}},
            {{"index", 1}, {"pci_bus_id", "00000000:2A:00.0"}}}}};
}

TEST(SlurmJobXids, OnlyTheJobsGpusWhileItRan) {
  nlohmann::json events = nlohmann::json::array(
      {event(kStart - 10 * kNsPerSec, 79, "0000:2a:00.0"),  // before the job
       event(kStart + 5 * kNsPerSec, 79, "0000:2a:00.0"),   // GPU 1, by its bus id
       event(kStart + 6 * kNsPerSec, 31, "0000:18:00.0"),   // GPU 0: not the job's
       event(kStart + 7 * kNsPerSec, 48, "0000:99:00.0"),   // unknown GPU: counts
       event(kEnd + 500 * kNsPerMs, 13, "", 1),             // within the slack at the end
       event(kEnd + 5 * kNsPerSec, 79, "0000:2a:00.0"),     // after the job
       {{"kind", "kmsg"}, {"time_ns", kStart + kNsPerSec}},
       {{"kind", "xid"}, {"time_ns", kStart + kNsPerSec}, {"xid", nullptr}}});
  auto xids = job_xids(events, status(), kStart, kEnd, std::set<unsigned>{1}, "7");
  ASSERT_EQ(xids.size(), 3u);
  EXPECT_EQ(xids[0].gpu, 1u);
  EXPECT_EQ(xids[0].text, "job 7: GPU 1 (0000:2a:00.0) Xid 79 GPU has fallen off the bus");
  EXPECT_EQ(xids[0].severity, Severity::kCritical);
  EXPECT_FALSE(xids[1].gpu);
  EXPECT_EQ(xids[1].xid, 48);
  EXPECT_EQ(xids[2].xid, 13);
  EXPECT_EQ(xids[2].text.rfind("job 7: GPU 1 Xid 13", 0), 0u) << xids[2].text;
  // Without a GPU list every GPU is the job's.
  EXPECT_EQ(job_xids(events, status(), kStart, kEnd, std::nullopt, "7").size(), 4u);
}

TEST(SlurmJobXids, BusIdsCompareWithoutDomainOrCase) {
  EXPECT_EQ(bus_key("00000000:2A:00.0"), "2a:00.0");
  EXPECT_EQ(bus_key("0000:2a:00.0"), "2a:00.0");
  EXPECT_EQ(bus_key("2a:00.0"), "2a:00.0");
}

}  // namespace
}  // namespace cardiac::slurm
