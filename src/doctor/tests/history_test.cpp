// SPDX-License-Identifier: Apache-2.0
// The history rules on a real store holding a made-up history: a card that faults again within
// a week of its return to service, wherever it sits, and a node whose cards fail in turn.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/format.h"
#include "core/tests/temp_dir.h"
#include "doctor/checks/checks.h"
#include "doctor/live/store_input.h"
#include "store/incidents.h"
#include "store/schema.h"

namespace cardiac::doctor {
namespace {

constexpr TimeNs kDay = 24 * 3600 * kNsPerSec;
constexpr TimeNs kHistoryNow = 1'780'000'000 * kNsPerSec;

struct Made {
  unsigned gpu = 0;
  std::string serial;
  std::string uuid;
  TimeNs start = 0;  // days before kNow
  std::optional<TimeNs> back;
  std::string cause = "xid_79";
};

class History : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::open_store(dir_.file("cardiac.db"));
    ASSERT_TRUE(db) << db.error().what();
    db_.emplace(std::move(*db));
  }
  // Records one incident's lifecycle as the agent would; returns its id.
  std::int64_t add(const Made& m) {
    store::Incident i;
    i.gpu = m.gpu;
    i.uuid = m.uuid;
    i.serial = m.serial;
    i.hostname = "node7";
    i.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x10 + m.gpu);
    i.cause = m.cause;
    i.started_ns = m.start;
    i.detected_ns = m.start + 2 * kNsPerSec;
    EXPECT_TRUE(store::open_incident(*db_, i).value());
    EXPECT_TRUE(store::mark_incident_fenced(*db_, m.gpu, m.start + 3 * kNsPerSec).value());
    auto open = store::open_incident_of(*db_, m.gpu);
    const std::int64_t id = (*open)->id;
    if (m.back) {
      EXPECT_TRUE(store::add_remediation(*db_, id,
                                         {store::RemediationAction::kReset, "nvidia-smi -r",
                                          "alice", m.start + kNsPerSec * 600})
                      .has_value());
      EXPECT_TRUE(store::close_incident(*db_, m.gpu, *m.back, "alice").value());
    }
    return id;
  }
  std::vector<Finding> findings() {
    DoctorInput in;
    in.now = kHistoryNow;
    auto incidents = incidents_from_store(*db_, kHistoryNow - kIncidentLookback);
    EXPECT_TRUE(incidents) << incidents.error().what();
    in.incidents = std::move(*incidents);
    std::vector<Finding> out;
    check_history(in, out);
    return out;
  }
  static const Finding* find(const std::vector<Finding>& f, std::string_view id) {
    auto it = std::find_if(f.begin(), f.end(), [&](const Finding& x) { return x.id == id; });
    return it == f.end() ? nullptr : &*it;
  }

  cardiac::testing::TempDir dir_;
  std::optional<store::Db> db_;
};

TEST_F(History, ACardFaultingAgainWithinAWeekInAnotherSlotIsARepeatOffender) {
  const TimeNs t1 = kHistoryNow - 20 * kDay;
  add({1, "1650000000001", "GPU-a", t1, t1 + kDay});
  // Moved to slot 4 after the reset; faults again 5 days after it came back.
  const std::int64_t second = add({4, "1650000000001", "GPU-a", t1 + 6 * kDay, std::nullopt});
  auto out = findings();
  const Finding* f = find(out, "history.repeat_offender");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(f->category, Category::kHardware);
  EXPECT_EQ(f->gpu.serial, "1650000000001");
  EXPECT_EQ(f->gpu.index, 4u);  // where it is now
  ASSERT_EQ(f->evidence.size(), 2u);
  // The whole lifecycle of each incident is in the ticket's evidence.
  EXPECT_NE(f->evidence[0].text.find("reset by alice"), std::string::npos) << f->evidence[0].text;
  EXPECT_NE(f->evidence[0].text.find("fenced 20"), std::string::npos) << f->evidence[0].text;
  EXPECT_NE(f->evidence[0].text.find("back in service"), std::string::npos);
  EXPECT_NE(f->evidence[1].text.find("still out of service"), std::string::npos);
  const bool rma = std::any_of(f->actions.begin(), f->actions.end(), [&](const std::string& a) {
    return a.find("--action rma") != std::string::npos &&
           a.find(std::to_string(second)) != std::string::npos;
  });
  EXPECT_TRUE(rma);
  EXPECT_EQ(find(out, "history.node_suspect"), nullptr);  // one card only
}

TEST_F(History, AFaultMoreThanAWeekAfterTheReturnIsNotARepeat) {
  const TimeNs t1 = kHistoryNow - 40 * kDay;
  add({1, "1650000000001", "GPU-a", t1, t1 + kDay});
  add({1, "1650000000001", "GPU-a", t1 + 9 * kDay, t1 + 10 * kDay});
  // Another card within the week does not make this one a repeat offender either.
  add({2, "1650000000002", "GPU-b", t1 + 2 * kDay, t1 + 3 * kDay});
  EXPECT_EQ(find(findings(), "history.repeat_offender"), nullptr);
}

TEST_F(History, DifferentCardsOfOneNodeFailingInTurnMakeTheNodeSuspect) {
  add({0, "1650000000010", "GPU-x", kHistoryNow - 25 * kDay, kHistoryNow - 24 * kDay});
  add({3, "1650000000013", "GPU-y", kHistoryNow - 15 * kDay, kHistoryNow - 14 * kDay});
  add({3, "1650000000013", "GPU-y", kHistoryNow - 2 * kDay, std::nullopt});
  auto out = findings();
  const Finding* f = find(out, "history.node_suspect");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);  // two cards
  EXPECT_TRUE(f->gpu.empty());
  EXPECT_EQ(f->evidence.size(), 3u);
  ASSERT_TRUE(f->cross_check);
  // The plan names the card that failed most.
  EXPECT_NE(f->cross_check->steps[0].find("1650000000013"), std::string::npos)
      << f->cross_check->steps[0];
  // A third card makes it critical; an incident older than 30 days does not count.
  add({5, "1650000000015", "GPU-z", kHistoryNow - kDay, std::nullopt});
  add({6, "1650000000016", "GPU-w", kHistoryNow - 45 * kDay, kHistoryNow - 44 * kDay});
  out = findings();
  f = find(out, "history.node_suspect");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(f->evidence.size(), 4u);
}

TEST_F(History, TwoIncidentsOnTwoCardsAreNotEnoughForTheNode) {
  add({0, "1650000000010", "GPU-x", kHistoryNow - 25 * kDay, kHistoryNow - 24 * kDay});
  add({3, "1650000000013", "GPU-y", kHistoryNow - 15 * kDay, kHistoryNow - 14 * kDay});
  EXPECT_TRUE(findings().empty());
}

}  // namespace
}  // namespace cardiac::doctor
