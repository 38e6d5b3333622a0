// SPDX-License-Identifier: Apache-2.0
// collect_host on the machine running the tests.
#include <gtest/gtest.h>

#include <thread>

#include "host/host.h"
#include "host/host_json.h"

namespace cardiac::host {
namespace {

TEST(HostLive, CollectsThisMachine) {
  RootFs fs("/");
  HostSnapshot a = collect_host(fs, ManualClock().now());  // only a timestamp
  for (const auto& e : a.errors) ADD_FAILURE() << e;
  ASSERT_TRUE(a.cpu);
  // libstdc++ answers with the online CPU count, which is what /proc/stat lists.
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0) {
    EXPECT_EQ(a.cpu->core_count(), hw);
  }
  EXPECT_GE(a.cpu->core_count(), 1u);
  ASSERT_TRUE(a.memory);
  EXPECT_GT(a.memory->total, 0u);
  EXPECT_TRUE(a.system.uptime_s);
  EXPECT_TRUE(a.system.kernel);

  HostSnapshot b = collect_host(fs, a.taken_at + kNsPerSec);
  HostRates r = compute_rates(a, b);
  EXPECT_DOUBLE_EQ(r.interval_s, 1.0);
  EXPECT_NO_THROW((void)to_json(b, &r).dump());
}

}  // namespace
}  // namespace cardiac::host
