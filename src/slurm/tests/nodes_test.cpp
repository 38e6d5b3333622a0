// SPDX-License-Identifier: Apache-2.0
#include "slurm/nodes.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace cardiac::slurm {
namespace {

// Lines as Slurm 22.05.8 prints them with SLURM_TIME_FORMAT=%s (shortened in the middle).
constexpr const char* kShowNode =
    "NodeName=n1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.90 "
    "OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 State=IDLE+DRAIN "
    "ThreadsPerCore=1 Partitions=gpu ExtSensorsTemp=n/s Reason=cardiac: GPU 3 (0000:3b:00.0) "
    "Xid 79 fell off the bus [root@1796429958]\n"
    "NodeName=n2 Arch=x86_64 CoresPerSocket=1 State=IDLE ThreadsPerCore=1 Partitions=gpu "
    "ExtSensorsTemp=n/s\n"
    "\n"
    "NodeName=n3 State=MIXED+DRAIN Reason=maintenance [alice@2026-12-05T00:19:18]\n"
    "NodeName=n4 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@Unknown]\n";

TEST(SlurmNodes, ParsesStateReasonUserAndTime) {
  auto nodes = parse_show_node(kShowNode);
  ASSERT_TRUE(nodes) << nodes.error().what();
  ASSERT_EQ(nodes->size(), 4u);
  const auto& n1 = (*nodes)[0];
  EXPECT_EQ(n1.name, "n1");
  EXPECT_EQ(n1.state, "IDLE+DRAIN");
  EXPECT_TRUE(n1.drain);
  EXPECT_EQ(n1.reason, "cardiac: GPU 3 (0000:3b:00.0) Xid 79 fell off the bus");
  EXPECT_EQ(n1.reason_user, "root");
  EXPECT_EQ(n1.reason_time, 1796429958LL * kNsPerSec);
  const auto& n2 = (*nodes)[1];
  EXPECT_FALSE(n2.drain);
  EXPECT_EQ(n2.reason, "");
  EXPECT_EQ(n2.reason_time, 0);
  EXPECT_TRUE((*nodes)[2].drain);
  EXPECT_EQ((*nodes)[2].reason, "maintenance");
  EXPECT_EQ((*nodes)[2].reason_user, "alice");
  EXPECT_GT((*nodes)[2].reason_time, 0);
  EXPECT_FALSE((*nodes)[3].drain);
  EXPECT_EQ((*nodes)[3].reason, "Not responding");
  EXPECT_EQ((*nodes)[3].reason_time, 0);
}

TEST(SlurmNodes, LineWithoutNodeNameIsAnErrorNamingIt) {
  auto nodes = parse_show_node("NodeName=n1 State=IDLE\nslurm_load_node error: timeout\n");
  ASSERT_FALSE(nodes);
  EXPECT_NE(nodes.error().what().find("line 2"), std::string::npos) << nodes.error().what();
}

TEST(SlurmNodes, LocalTimesFollowTheTimeZone) {
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(parse_slurm_time("2026-12-05T00:19:18").value(), 1796429958LL * kNsPerSec);
  EXPECT_EQ(parse_slurm_time("1796429958").value(), 1796429958LL * kNsPerSec);
  EXPECT_FALSE(parse_slurm_time("Unknown"));
  EXPECT_FALSE(parse_slurm_time("None"));
  EXPECT_FALSE(parse_slurm_time("2026-12-05"));
}

TEST(SlurmNodes, TimesPastWhatNanosecondsHoldAreNotTimes) {
  setenv("TZ", "UTC", 1);
  tzset();
  // Found by fuzz_slurm: year 9999 in nanoseconds overflowed a signed 64-bit count.
  EXPECT_FALSE(parse_slurm_time("9437-03-01T00:00:00"));
  EXPECT_FALSE(parse_slurm_time("99999999999"));
  EXPECT_TRUE(parse_slurm_time("2262-01-01T00:00:00"));
}

TEST(SlurmNodes, ParsesAJob) {
  auto job = parse_show_job(
      "JobId=7 JobName=train UserId=root(0) JobState=COMPLETING Reason=None "
      "StartTime=1796430000 EndTime=1796430060 NodeList=n1 BatchHost=n1\n");
  ASSERT_TRUE(job) << job.error().what();
  EXPECT_EQ(job->id, "7");
  EXPECT_EQ(job->state, "COMPLETING");
  EXPECT_EQ(job->start, 1796430000LL * kNsPerSec);
  EXPECT_EQ(job->end, 1796430060LL * kNsPerSec);
  EXPECT_EQ(job->nodes, "n1");
  EXPECT_FALSE(parse_show_job("slurm_load_jobs error: Invalid job id specified\n"));
}

TEST(SlurmNodes, GpuListsAreIndices) {
  EXPECT_EQ(parse_gpu_list("0,1,5").value(), (std::vector<unsigned>{0, 1, 5}));
  EXPECT_EQ(parse_gpu_list("").value(), std::vector<unsigned>{});
  auto uuid = parse_gpu_list("GPU-26a72a14-4d39");
  ASSERT_FALSE(uuid);
  EXPECT_NE(uuid.error().what().find("GPU-26a72a14-4d39"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::slurm
