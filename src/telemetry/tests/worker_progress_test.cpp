// SPDX-License-Identifier: Apache-2.0
// The shared progress page: what one side publishes the other reads.
#include <gtest/gtest.h>

#include "telemetry/worker_progress.h"

namespace cardiac::telemetry {
namespace {

TEST(WorkerProgress, PublishedCallIsReadBackThroughASecondMapping) {
  auto parent = WorkerProgress::create();
  ASSERT_TRUE(parent) << parent.error().what();
  EXPECT_FALSE((*parent)->read());
  int dup_fd = dup((*parent)->fd());
  auto worker = WorkerProgress::attach(dup_fd);
  ASSERT_TRUE(worker);
  (*worker)->publish(3, "nvmlDeviceGetTemperature");
  auto call = (*parent)->read();
  ASSERT_TRUE(call);
  EXPECT_EQ(call->device, 3);
  EXPECT_EQ(call->function, "nvmlDeviceGetTemperature");
}

TEST(WorkerProgress, LongNamesAreCut) {
  auto p = WorkerProgress::create();
  ASSERT_TRUE(p);
  (*p)->publish(-1, std::string(500, 'x'));
  auto call = (*p)->read();
  ASSERT_TRUE(call);
  EXPECT_EQ(call->device, -1);
  EXPECT_LT(call->function.size(), 200u);
}

}  // namespace
}  // namespace cardiac::telemetry
