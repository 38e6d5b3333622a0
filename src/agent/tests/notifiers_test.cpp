// SPDX-License-Identifier: Apache-2.0
// Alert changes and open alerts become notifications; silenced ones never do.
#include <gtest/gtest.h>

#include "agent/notifiers.h"

namespace cardiac::agent {
namespace {

alerts::Alert firing(std::int64_t id, bool silenced) {
  alerts::Alert a;
  a.id = id;
  a.rule = "gpu_hot";
  a.state = rules::AlertState::kFiring;
  a.severity = Severity::kCritical;
  a.labels = {{"gpu", "1"}};
  a.description = "GPU 1 at 90 °C";
  a.started_ns = 10;
  a.fired_ns = 20;
  a.last_value = 90;
  a.fingerprint = "f";
  a.silenced = silenced;
  return a;
}

TEST(Notifications, OnlyFiringUnsilencedAlertsAreSentAgain) {
  auto pending = firing(3, false);
  pending.state = rules::AlertState::kPending;
  auto out = firing_notifications({firing(1, false), firing(2, true), pending}, "node-1");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, "firing");
  EXPECT_EQ(out[0].alertname, "gpu_hot");
  EXPECT_EQ(out[0].labels.at("hostname"), "node-1");
  EXPECT_EQ(out[0].labels.at("gpu"), "1");
  EXPECT_EQ(out[0].starts_at, 20);  // when it began firing, not when it went pending
  EXPECT_EQ(out[0].annotations.at("description"), "GPU 1 at 90 °C");
}

TEST(Notifications, SilencedChangesAreNotNotified) {
  alerts::AlertChange a;
  a.rule = "r";
  a.status = alerts::ChangeStatus::kResolved;
  a.ended_ns = 99;
  alerts::AlertChange b = a;
  b.silenced = true;
  auto out = to_notifications({a, b}, "h");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, "resolved");
  EXPECT_EQ(out[0].ends_at, 99);
}

TEST(Notifications, DispatchersSplitAlertmanagerFromTheRest) {
  config::Config c;
  auto others = make_dispatcher(c, false);
  ASSERT_TRUE(others);
  EXPECT_TRUE(*others);  // nothing configured: the log
  auto am = make_dispatcher(c, true);
  ASSERT_TRUE(am);
  EXPECT_FALSE(*am);
  c.notifiers.push_back({"alertmanager", "http://127.0.0.1:9093", {}, {}, kNsPerSec, "x"});
  EXPECT_TRUE(*make_dispatcher(c, true));
  EXPECT_FALSE(*make_dispatcher(c, false));  // only Alertmanager configured: no log fallback
}

}  // namespace
}  // namespace cardiac::agent
