// SPDX-License-Identifier: Apache-2.0
// Incidents: one open per GPU, closed once, listed newest first.
#include <gtest/gtest.h>

#include "store/incidents.h"
#include "store/tests/support.h"

namespace cardiac::store {
namespace {

TEST(Incidents, OneOpenPerGpuClosedOnce) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  Incident lost{
      0, 5, "GPU-5", "0000:ab:00.0", nvml::DeviceHealth::kLost, 100, std::nullopt, "GPU_IS_LOST"};
  EXPECT_TRUE(*open_incident(db, lost));
  EXPECT_FALSE(*open_incident(db, lost));  // already open
  Incident other = lost;
  other.gpu = 3;
  other.started_ns = 150;
  EXPECT_TRUE(*open_incident(db, other));
  EXPECT_TRUE(*close_incident(db, 5, 200));
  EXPECT_FALSE(*close_incident(db, 5, 300));
  auto list = incidents_since(db, 0);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].gpu, 3u);
  EXPECT_FALSE((*list)[0].ended_ns);
  EXPECT_EQ((*list)[1].ended_ns, 200);
  EXPECT_EQ((*list)[1].evidence, "GPU_IS_LOST");
  EXPECT_EQ((*list)[1].kind, nvml::DeviceHealth::kLost);
  // A later fault of the same GPU is a new incident.
  lost.started_ns = 400;
  EXPECT_TRUE(*open_incident(db, lost));
  EXPECT_EQ(incidents_since(db, 300)->size(), 2u);  // the new one and the still-open GPU 3
}

// The row keeps the health's name, read back as the enum; a name it does not know is an error
// naming the incident.
TEST(Incidents, TheKindIsStoredByNameAndAnUnknownNameIsRefused) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  Incident hung{0, 1, "GPU-1", "", nvml::DeviceHealth::kUnresponsive, 100, std::nullopt, ""};
  ASSERT_TRUE(*open_incident(db, hung));
  auto st = db.prepare("SELECT kind FROM incidents");
  ASSERT_TRUE(st);
  ASSERT_TRUE(*st->step());
  EXPECT_EQ(st->column_text(0), "unresponsive");
  ASSERT_TRUE(db.exec("UPDATE incidents SET kind = 'melted'"));
  auto list = incidents_since(db, 0);
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().what().find("incident 1"), std::string::npos) << list.error().what();
  EXPECT_NE(list.error().what().find("\"melted\""), std::string::npos) << list.error().what();
}

}  // namespace
}  // namespace cardiac::store
