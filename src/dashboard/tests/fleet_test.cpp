// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "dashboard/fleet.h"

namespace cardiac::dashboard {
namespace {

TEST(FleetAnswer, IsTheFleetSchemaWithWhenItWasRead) {
  fleet::FleetView v;
  v.prometheus = "http://prom:9090";
  v.job = "cardiac";
  fleet::FleetNode n;
  n.instance = "127.0.0.1:1";
  n.hostname = "127.0.0.1";
  n.reason = "not scraped: connection refused";
  v.nodes.push_back(n);
  const auto j = fleet_answer(v, 1'796'445'545'000'000'000);
  EXPECT_EQ(j["schema"], "cardiac.fleet/v1");
  EXPECT_EQ(j["verdict"], "unknown");
  EXPECT_EQ(j["nodes"][0]["verdict"], "unknown");
  EXPECT_EQ(j["read_at"], "2026-12-05T04:39:05.000Z");
}

}  // namespace
}  // namespace cardiac::dashboard
