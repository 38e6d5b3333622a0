// SPDX-License-Identifier: Apache-2.0
// Tests for the alert book on a real SQLite file.
#include "alerts/alert_book.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "alerts/alert_json.h"
#include "rules/parse.h"
#include "store/schema.h"

namespace cardiac::alerts {
namespace {

using rules::AlertState;

class AlertBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/cardiac-alerts-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    db_ = open();
    book_.emplace(*db_, clock_);
    ASSERT_TRUE(book_->load());
  }
  void TearDown() override {
    book_.reset();
    db_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::optional<store::Db> open() {
    auto db = store::open_store(dir_ + "/cardiac.db");
    EXPECT_TRUE(db) << db.error().what();
    return db ? std::optional<store::Db>(std::move(*db)) : std::nullopt;
  }
  std::int64_t scalar(const std::string& sql) { return db_->query_int64(sql).value().value_or(-1); }

  rules::Transition tr(AlertState from, AlertState to, std::string gpu = "0",
                       std::string rule = "gpu_hot") {
    rules::Transition t;
    t.rule = std::move(rule);
    t.labels = {{"gpu", std::move(gpu)}, {"uuid", "GPU-0"}};
    t.from = from;
    t.to = to;
    t.value = 91;
    t.at = clock_.now();
    t.severity = rules::Severity::kCritical;
    t.description = "GPU hot";
    return t;
  }
  std::vector<AlertChange> apply(std::vector<rules::Transition> ts) {
    auto r = book_->apply(ts);
    EXPECT_TRUE(r) << r.error().what();
    return r ? *r : std::vector<AlertChange>{};
  }

  std::string dir_;
  ManualClock clock_;
  std::optional<store::Db> db_;
  std::optional<AlertBook> book_;
};

TEST_F(AlertBookTest, PendingFiringResolvedNotifiesTwiceWithThreeHistoryRows) {
  EXPECT_TRUE(apply({tr(AlertState::kInactive, AlertState::kPending)}).empty());
  auto alerts = book_->list(false).value();
  ASSERT_EQ(alerts.size(), 1U);
  EXPECT_EQ(alerts[0].state, AlertState::kPending);
  const TimeNs started = clock_.now();

  clock_.advance(60 * kNsPerSec);
  auto fired = apply({tr(AlertState::kPending, AlertState::kFiring)});
  ASSERT_EQ(fired.size(), 1U);
  EXPECT_EQ(fired[0].status, ChangeStatus::kFiring);
  EXPECT_EQ(fired[0].alert_id, alerts[0].id);
  EXPECT_EQ(fired[0].rule, "gpu_hot");
  EXPECT_EQ(fired[0].severity, Severity::kCritical);
  EXPECT_EQ(fired[0].labels.at("gpu"), "0");
  EXPECT_EQ(fired[0].description, "GPU hot");
  EXPECT_EQ(fired[0].value, 91);
  EXPECT_EQ(fired[0].started_ns, clock_.now());
  EXPECT_FALSE(fired[0].ended_ns);
  EXPECT_FALSE(fired[0].silenced);
  EXPECT_EQ(fired[0].fingerprint, fingerprint("gpu_hot", {{"gpu", "0"}, {"uuid", "GPU-0"}}));
  const TimeNs fired_at = clock_.now();

  clock_.advance(60 * kNsPerSec);
  auto resolved = apply({tr(AlertState::kFiring, AlertState::kResolved)});
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].status, ChangeStatus::kResolved);
  EXPECT_EQ(resolved[0].started_ns, fired_at);
  EXPECT_EQ(resolved[0].ended_ns, clock_.now());

  EXPECT_TRUE(book_->list(false).value().empty());
  const Alert a = book_->get(alerts[0].id).value();
  EXPECT_EQ(a.state, AlertState::kResolved);
  EXPECT_EQ(a.started_ns, started);
  EXPECT_EQ(a.fired_ns, fired_at);
  EXPECT_EQ(a.resolved_ns, clock_.now());
  EXPECT_EQ(scalar("SELECT count(*) FROM alert_history"), 3);
  EXPECT_EQ(scalar("SELECT count(*) FROM alert_history WHERE from_state = 'firing' AND "
                   "to_state = 'resolved'"),
            1);
  const auto j = to_json(a);
  EXPECT_EQ(j["state"], "resolved");
  EXPECT_TRUE(j["acked_by"].is_null());
  EXPECT_TRUE(j["resolved"].is_string());
}

TEST_F(AlertBookTest, PendingThatClearsIsClosedWithoutNotice) {
  apply({tr(AlertState::kInactive, AlertState::kPending)});
  EXPECT_TRUE(apply({tr(AlertState::kPending, AlertState::kInactive)}).empty());
  EXPECT_TRUE(book_->list(false).value().empty());
  EXPECT_EQ(book_->list(true).value().at(0).state, AlertState::kInactive);
}

TEST_F(AlertBookTest, RefireAfterResolveIsANewAlert) {
  const auto first = apply({tr(AlertState::kInactive, AlertState::kFiring)});
  apply({tr(AlertState::kFiring, AlertState::kResolved)});
  clock_.advance(kNsPerSec);
  const auto second = apply({tr(AlertState::kResolved, AlertState::kFiring)});
  ASSERT_EQ(first.size(), 1U);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_NE(first[0].alert_id, second[0].alert_id);
  EXPECT_EQ(first[0].fingerprint, second[0].fingerprint);
  EXPECT_EQ(book_->list(true).value().size(), 2U);
  EXPECT_EQ(book_->list(false).value().size(), 1U);
}

TEST_F(AlertBookTest, DuplicateFiringDoesNotDuplicate) {
  auto t = tr(AlertState::kInactive, AlertState::kFiring);
  EXPECT_EQ(apply({t, t}).size(), 1U);
  t.value = 95;
  EXPECT_TRUE(apply({t}).empty());
  EXPECT_EQ(scalar("SELECT count(*) FROM alerts"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM alert_history"), 1);
  EXPECT_EQ(book_->list(false).value().at(0).last_value, 95);
  // Another GPU is another alert.
  EXPECT_EQ(apply({tr(AlertState::kInactive, AlertState::kFiring, "1")}).size(), 1U);
  EXPECT_EQ(book_->list(false).value().size(), 2U);
}

TEST_F(AlertBookTest, RestartRestoresOpenAlertsAndResolveStillWorks) {
  apply({tr(AlertState::kInactive, AlertState::kFiring)});
  apply({tr(AlertState::kInactive, AlertState::kPending, "1")});
  book_.reset();
  db_.reset();
  db_ = open();
  book_.emplace(*db_, clock_);
  auto restored = book_->load();
  ASSERT_TRUE(restored) << restored.error().what();
  ASSERT_EQ(restored->size(), 2U);
  // A fresh rule engine reports the same condition again: no new alert, no notice.
  EXPECT_TRUE(apply({tr(AlertState::kInactive, AlertState::kPending)}).empty());
  EXPECT_TRUE(apply({tr(AlertState::kPending, AlertState::kFiring)}).empty());
  EXPECT_EQ(scalar("SELECT count(*) FROM alerts"), 2);
  auto resolved = apply({tr(AlertState::kFiring, AlertState::kResolved)});
  ASSERT_EQ(resolved.size(), 1U);
  EXPECT_EQ(resolved[0].status, ChangeStatus::kResolved);
}

TEST_F(AlertBookTest, AStoredStateOrSeverityItDoesNotKnowIsAnErrorNamingTheAlert) {
  ASSERT_TRUE(
      db_->exec("INSERT INTO alerts(rule, labels_json, state, severity, started_ns) "
                "VALUES ('odd', '{}', 'exploded', 'warning', 1)"));
  auto listed = book_->list(true);
  ASSERT_FALSE(listed);
  EXPECT_NE(listed.error().what().find("unknown state \"exploded\""), std::string::npos)
      << listed.error().what();
}

TEST_F(AlertBookTest, LoadFingerprintsRowsFromBeforeTheColumn) {
  ASSERT_TRUE(
      db_->exec("INSERT INTO alerts(rule, labels_json, state, severity, started_ns) "
                "VALUES ('old', '{\"gpu\":\"2\"}', 'firing', 'warning', 1)"));
  auto restored = book_->load().value();
  ASSERT_EQ(restored.size(), 1U);
  EXPECT_EQ(restored[0].fingerprint, fingerprint("old", {{"gpu", "2"}}));
  auto t = tr(AlertState::kFiring, AlertState::kResolved, "2", "old");
  t.labels = {{"gpu", "2"}};
  EXPECT_EQ(apply({t}).size(), 1U);
}

TEST_F(AlertBookTest, AckMarksButKeepsFiring) {
  const auto id = apply({tr(AlertState::kInactive, AlertState::kFiring)}).at(0).alert_id;
  clock_.advance(5 * kNsPerSec);
  auto a = book_->ack(id, "alice");
  ASSERT_TRUE(a) << a.error().what();
  EXPECT_EQ(a->state, AlertState::kFiring);
  EXPECT_EQ(a->acked_by, "alice");
  EXPECT_EQ(a->acked_ns, clock_.now());
  EXPECT_EQ(to_json(*a)["acked_by"], "alice");
  // A later refresh of the same firing alert keeps the ack.
  apply({tr(AlertState::kInactive, AlertState::kFiring)});
  EXPECT_EQ(book_->get(id).value().acked_by, "alice");
}

TEST_F(AlertBookTest, UnknownIdIsNotFound) {
  EXPECT_EQ(book_->get(42).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(book_->ack(42, "bob").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(book_->expire_silence(42).error().code, ErrorCode::kNotFound);
}

TEST_F(AlertBookTest, SilenceByRuleMarksChangesUntilItExpires) {
  auto s = book_->add_silence("rule=gpu_hot", 60 * kNsPerSec, "alice", "maintenance");
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->ends_ns - s->starts_ns, 60 * kNsPerSec);
  EXPECT_EQ(to_json(*s)["matchers"], "rule=gpu_hot");
  auto c = apply({tr(AlertState::kInactive, AlertState::kFiring)});
  ASSERT_EQ(c.size(), 1U);
  EXPECT_TRUE(c[0].silenced);  // stored and changed state, but not to be notified
  EXPECT_EQ(book_->get(c[0].alert_id).value().state, AlertState::kFiring);
  EXPECT_TRUE(book_->list(false).value().at(0).silenced);
  auto other = apply({tr(AlertState::kInactive, AlertState::kFiring, "0", "gpu_ecc")});
  EXPECT_FALSE(other.at(0).silenced);

  clock_.advance(60 * kNsPerSec);  // the silence ends
  EXPECT_TRUE(book_->list_silences().value().empty());
  EXPECT_EQ(book_->list_silences(true).value().size(), 1U);
  EXPECT_FALSE(book_->list(false).value().at(0).silenced);
  // The firing notice was withheld, so its resolve is withheld too.
  EXPECT_TRUE(apply({tr(AlertState::kFiring, AlertState::kResolved)}).at(0).silenced);
  EXPECT_FALSE(apply({tr(AlertState::kInactive, AlertState::kFiring)}).at(0).silenced);
}

TEST_F(AlertBookTest, SilenceByLabelAndEarlyExpiry) {
  const auto s = book_->add_silence("gpu=1,severity=critical", 3600 * kNsPerSec, "bob", "").value();
  EXPECT_FALSE(apply({tr(AlertState::kInactive, AlertState::kFiring, "0")}).at(0).silenced);
  EXPECT_TRUE(apply({tr(AlertState::kInactive, AlertState::kFiring, "1")}).at(0).silenced);
  clock_.advance(kNsPerSec);
  auto ended = book_->expire_silence(s.id);
  ASSERT_TRUE(ended) << ended.error().what();
  EXPECT_EQ(ended->ends_ns, clock_.now());
  EXPECT_TRUE(book_->list_silences().value().empty());
  EXPECT_FALSE(apply({tr(AlertState::kInactive, AlertState::kFiring, "2")}).at(0).silenced);
}

TEST_F(AlertBookTest, BadSilenceIsRefused) {
  auto bad = book_->add_silence("rule=x,gpu", 60 * kNsPerSec, "bob", "");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("\"gpu\""), std::string::npos) << bad.error().what();
  EXPECT_EQ(book_->add_silence("rule=x", 0, "bob", "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(scalar("SELECT count(*) FROM silences"), 0);
}

TEST_F(AlertBookTest, FailureMidApplyLeavesNoPartialState) {
  // The second history row fails, after the first alert and its history were written.
  ASSERT_TRUE(db_->exec(
      "CREATE TRIGGER fail_second BEFORE INSERT ON alert_history "
      "WHEN (SELECT count(*) FROM alert_history) >= 1 BEGIN SELECT RAISE(ABORT, 'injected'); END"));
  auto r = book_->apply({tr(AlertState::kInactive, AlertState::kFiring, "0"),
                         tr(AlertState::kInactive, AlertState::kFiring, "1")});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("injected"), std::string::npos) << r.error().what();
  EXPECT_EQ(scalar("SELECT count(*) FROM alerts"), 0);
  EXPECT_EQ(scalar("SELECT count(*) FROM alert_history"), 0);
  // The book is usable afterwards and the same transitions go through.
  ASSERT_TRUE(db_->exec("DROP TRIGGER fail_second"));
  EXPECT_EQ(apply({tr(AlertState::kInactive, AlertState::kFiring, "0"),
                   tr(AlertState::kInactive, AlertState::kFiring, "1")})
                .size(),
            2U);
}

// What the agent does at start: a fresh engine adopts the stored open alerts, so the normal
// path continues or closes them.
class RestartTest : public AlertBookTest {
 protected:
  static constexpr std::string_view kRules = R"(
[[rule]]
name = "hot"
metric = "gpu_temperature"
op = ">"
threshold = 80
description = "GPU {gpu} at {value} C"
labels = { team = "infra" }

[[rule]]
name = "warm"
metric = "gpu_temperature"
op = ">"
threshold = 70
for = "5m"

[[rule]]
name = "xid"
kind = "increase"
metric = "gpu_xid_errors_total"
op = ">"
threshold = 0
window = "1h"
)";
  rules::RuleEngine restart() {
    book_.reset();
    db_.reset();
    db_ = open();
    book_.emplace(*db_, clock_);
    rules::RuleEngine e(rules::parse_rules(kRules, "test.toml").value());
    const auto open = book_->load().value();
    for (const Alert& a : open) {
      EXPECT_TRUE(e.adopt(a.rule, a.labels, a.state, a.started_ns, a.last_value.value_or(0)))
          << a.rule;
    }
    return e;
  }
  std::vector<AlertChange> step(rules::RuleEngine& e, std::vector<rules::Point> points) {
    rules::SampleView v;
    v.points = std::move(points);
    v.at = clock_.now();
    return apply(e.evaluate(v, clock_.now()));
  }
  std::vector<Alert> open_alerts() { return book_->list(false).value(); }
};

rules::Point temp(int gpu, double c) {
  return rules::Point{"gpu_temperature", {{"gpu", std::to_string(gpu)}}, c};
}

TEST_F(RestartTest, ClearedConditionResolvesAndHeldOneContinues) {
  {
    rules::RuleEngine e(rules::parse_rules(kRules, "test.toml").value());
    EXPECT_EQ(step(e, {temp(0, 90), temp(1, 90)}).size(), 2U);  // hot fires on both
    EXPECT_EQ(open_alerts().size(), 4U);                        // and warm is pending
  }
  clock_.advance(60 * kNsPerSec);
  auto e = restart();
  // GPU 0 cooled down, GPU 1 is still hot: one resolve notice, nothing new.
  auto changes = step(e, {temp(0, 40), temp(1, 90)});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].status, ChangeStatus::kResolved);
  EXPECT_EQ(changes[0].rule, "hot");
  EXPECT_EQ(changes[0].labels.at("gpu"), "0");
  auto open = open_alerts();
  ASSERT_EQ(open.size(), 2U);  // hot and warm on GPU 1
  EXPECT_EQ(scalar("SELECT count(*) FROM alerts"), 4);
  // The pending one keeps its first start: it fires 5 minutes after it began, not after the
  // restart.
  clock_.advance(4 * 60 * kNsPerSec);
  changes = step(e, {temp(1, 90)});
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].rule, "warm");
  EXPECT_EQ(changes[0].status, ChangeStatus::kFiring);
  EXPECT_EQ(scalar("SELECT count(*) FROM alerts"), 4);
}

TEST_F(RestartTest, MissingSeriesResolvesAtOnce) {
  {
    rules::RuleEngine e(rules::parse_rules(kRules, "test.toml").value());
    step(e, {temp(3, 90)});
  }
  auto e = restart();
  auto changes = step(e, {temp(0, 40)});  // GPU 3 is gone
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].status, ChangeStatus::kResolved);
  EXPECT_TRUE(open_alerts().empty());
}

TEST_F(RestartTest, CounterAlertResolvesWithoutNewIncrease) {
  auto xid = [](double n) {
    return rules::Point{"gpu_xid_errors_total", {{"gpu", "0"}, {"xid", "79"}}, n};
  };
  {
    rules::RuleEngine e(rules::parse_rules(kRules, "test.toml").value());
    step(e, {xid(0)});
    clock_.advance(10 * kNsPerSec);
    ASSERT_EQ(step(e, {xid(2)}).size(), 1U);
  }
  auto e = restart();
  // Counted since the agent started: 0 again after the restart, and nothing new.
  std::vector<AlertChange> changes;
  for (int i = 0; i < 3 && changes.empty(); ++i) {
    clock_.advance(10 * kNsPerSec);
    changes = step(e, {xid(0)});
  }
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].status, ChangeStatus::kResolved);
  EXPECT_TRUE(open_alerts().empty());
}

}  // namespace
}  // namespace cardiac::alerts
