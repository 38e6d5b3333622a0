// SPDX-License-Identifier: Apache-2.0
// Incidents: one open per GPU, closed once, listed newest first.
#include <gtest/gtest.h>

#include "store/incidents.h"
#include "store/schema.h"
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

// A fault's whole lifecycle: opened at the Xid's time and detected later, fenced once,
// remediated twice by the operator who said so, returned to service by auto-unfence.
TEST(Incidents, TheLifecycleIsKeptWithTheCardAndNode) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  Incident i;
  i.gpu = 2;
  i.uuid = "GPU-2";
  i.serial = "1650123456789";
  i.hostname = "node7";
  i.pci_bus_id = "0000:1b:00.0";
  i.cause = "xid_79";
  i.started_ns = 1000;
  i.detected_ns = 1500;
  i.evidence = "NVRM: Xid (PCI:0000:1b:00): 79";
  ASSERT_TRUE(*open_incident(db, i));
  EXPECT_TRUE(*mark_incident_fenced(db, 2, 1600));
  EXPECT_FALSE(*mark_incident_fenced(db, 2, 1700));  // the first fence counts
  auto open = open_incident_of(db, 2);
  ASSERT_TRUE(open && *open);
  const std::int64_t id = (*open)->id;
  ASSERT_TRUE(add_remediation(db, id, {RemediationAction::kReset, "nvidia-smi -r", "alice", 1800}));
  ASSERT_TRUE(add_remediation(db, id, {RemediationAction::kReseat, "reseated", "bob", 1900}));
  EXPECT_TRUE(*close_incident(db, 2, 2000, "auto-unfence"));
  EXPECT_FALSE(*open_incident_of(db, 2));

  auto got = incident_by_id(db, id);
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_EQ(got->serial, "1650123456789");
  EXPECT_EQ(got->hostname, "node7");
  EXPECT_EQ(got->cause, "xid_79");
  EXPECT_EQ(got->started_ns, 1000);
  EXPECT_EQ(got->detected_ns, 1500);
  EXPECT_EQ(got->fenced_ns, 1600);
  EXPECT_EQ(got->ended_ns, 2000);
  EXPECT_EQ(got->returned_by, "auto-unfence");
  EXPECT_EQ(got->card(), "serial 1650123456789");
  ASSERT_EQ(got->remediations.size(), 2u);
  EXPECT_EQ(got->remediations[0].action, RemediationAction::kReset);
  EXPECT_EQ(got->remediations[0].who, "alice");
  EXPECT_EQ(got->remediations[1].action, RemediationAction::kReseat);
  EXPECT_EQ(got->remediations[1].note, "reseated");
  auto listed = incidents_since(db, 0);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].remediations.size(), 2u);
}

TEST(Incidents, AnUnknownIdOrActionIsRefusedByName) {
  testing::TempDir dir;
  Db db = testing::open_test_store(dir);
  auto st = add_remediation(db, 42, {RemediationAction::kRma, "", "alice", 1});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kNotFound);
  EXPECT_NE(st.error().what().find("no incident 42"), std::string::npos) << st.error().what();
  EXPECT_EQ(testing::scalar(db, "SELECT count(*) FROM incident_remediations"), 0);
  auto bad = remediation_action_from_name("pray");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("\"pray\""), std::string::npos) << bad.error().what();
  EXPECT_EQ(remediation_action_from_name("rma").value(), RemediationAction::kRma);
}

// A store written before schema 8 keeps its incidents: they read back with their detection at
// their start and take remediations.
TEST(Incidents, AStoreFromBeforeTheLifecycleKeepsItsIncidents) {
  testing::TempDir dir;
  {
    Db db = testing::open_test_store(dir);
    ASSERT_TRUE(db.exec(testing::kUndoMigration8));
    ASSERT_TRUE(db.exec(
        "DELETE FROM schema_version WHERE version >= 8; "
        "INSERT INTO incidents(gpu, uuid, pci_bus_id, kind, started_ns, ended_ns, evidence) "
        "VALUES (1, 'GPU-1', '0000:01:00.0', 'lost', 100, 200, 'GPU_IS_LOST'), "
        "(3, 'GPU-3', '0000:03:00.0', 'reset_required', 300, NULL, '');"));
    ASSERT_EQ(schema_version(db).value(), 7);
  }
  Db db = testing::open_test_store(dir);
  EXPECT_EQ(schema_version(db).value(), latest_schema_version());
  auto list = incidents_since(db, 0);
  ASSERT_TRUE(list) << list.error().what();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].uuid, "GPU-1");
  EXPECT_EQ((*list)[1].ended_ns, 200);
  EXPECT_EQ((*list)[1].detected_ns, 100);
  EXPECT_EQ((*list)[1].evidence, "GPU_IS_LOST");
  EXPECT_EQ((*list)[1].serial, "");
  EXPECT_FALSE((*list)[1].fenced_ns);
  EXPECT_EQ((*list)[0].kind, nvml::DeviceHealth::kResetRequired);
  // The open one is still the GPU's open incident and takes the new steps.
  EXPECT_TRUE(*mark_incident_fenced(db, 3, 350));
  ASSERT_TRUE(add_remediation(db, (*list)[0].id, {RemediationAction::kReboot, "", "ops", 400}));
  EXPECT_TRUE(*close_incident(db, 3, 500, "alice"));
  auto after = incident_by_id(db, (*list)[0].id);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->fenced_ns, 350);
  EXPECT_EQ(after->remediations.size(), 1u);
  EXPECT_EQ(after->returned_by, "alice");
}

}  // namespace
}  // namespace cardiac::store
