// SPDX-License-Identifier: Apache-2.0
// AlertBook: the transition -> alert state machine over SQLite, acks and silences.
#include "alerts/alert_book.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/format.h"

namespace cardiac::alerts {
namespace {

constexpr std::string_view kAlertColumns =
    "id, rule, labels_json, state, severity, started_ns, fired_ns, resolved_ns, last_value, "
    "description, acked_by, acked_ns, fingerprint, silenced";
constexpr std::string_view kSilenceColumns =
    "id, matchers_json, starts_ns, ends_ns, created_by, comment, created_ns";

std::string labels_to_json(const rules::Labels& labels) {
  return nlohmann::json(labels.map()).dump();
}

Result<rules::Labels> labels_from_json(std::string_view json, std::int64_t id) {
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  rules::Labels out;
  if (!j.is_object())
    return fail(Error::parse("labels_json is not an object", fmt::format("alert {}", id)));
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string())
      return fail(Error::parse(fmt::format("label \"{}\" is not a string", k),
                               fmt::format("alert {}", id)));
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

bool silenced_by(const std::vector<Silence>& silences, std::string_view rule,
                 std::string_view severity, const rules::Labels& labels) {
  return std::any_of(silences.begin(), silences.end(),
                     [&](const Silence& s) { return matches(s.matchers, rule, severity, labels); });
}

// Steps a query to completion, reading each row with `read`.
template <class T, class F>
Result<std::vector<T>> collect(store::Statement& st, F read) {
  std::vector<T> out;
  for (;;) {
    auto row = st.step();
    if (!row) return fail(std::move(row).error());
    if (!*row) break;
    auto item = read(st);
    if (!item) return fail(std::move(item).error());
    out.push_back(std::move(*item));
  }
  return out;
}

Result<Alert> read_alert(const store::Statement& st) {
  Alert a;
  a.id = st.column_int64(0);
  a.rule = st.column_text(1);
  auto labels = labels_from_json(st.column_text(2), a.id);
  if (!labels) return fail(std::move(labels).error());
  a.labels = std::move(*labels);
  const std::string state = st.column_text(3);
  const std::string severity = st.column_text(4);
  const auto parsed_state = rules::parse_alert_state(state);
  if (!parsed_state) {
    return fail(
        Error::parse(fmt::format("unknown state \"{}\"", state), fmt::format("alert {}", a.id)));
  }
  const auto parsed_severity = parse_severity(severity);
  if (!parsed_severity) {
    return fail(Error::parse(fmt::format("unknown severity \"{}\"", severity),
                             fmt::format("alert {}", a.id)));
  }
  a.state = *parsed_state;
  a.severity = *parsed_severity;
  a.started_ns = st.column_int64(5);
  a.fired_ns = st.column_opt_int64(6);
  a.resolved_ns = st.column_opt_int64(7);
  a.last_value = st.column_opt_double(8);
  a.description = st.column_text(9);
  if (!st.column_is_null(10)) a.acked_by = st.column_text(10);
  a.acked_ns = st.column_opt_int64(11);
  a.fingerprint = st.column_text(12);
  a.silenced = st.column_int64(13) != 0;
  return a;
}

Result<Silence> read_silence(const store::Statement& st) {
  Silence s;
  s.id = st.column_int64(0);
  auto m = matchers_from_json(st.column_text(1));
  if (!m) return fail(m.error().with_context(fmt::format("silence {}", s.id)));
  s.matchers = std::move(*m);
  s.starts_ns = st.column_int64(2);
  s.ends_ns = st.column_int64(3);
  s.created_by = st.column_text(4);
  s.comment = st.column_text(5);
  s.created_ns = st.column_int64(6);
  return s;
}

// The open alert for one fingerprint, as far as apply() needs it.
struct OpenAlert {
  std::int64_t id = 0;
  rules::AlertState state = rules::AlertState::kPending;
  TimeNs fired_ns = 0;
  bool silenced = false;
};

}  // namespace

std::string_view change_status_name(ChangeStatus s) {
  return s == ChangeStatus::kFiring ? "firing" : "resolved";
}

std::string fingerprint(std::string_view rule, const rules::Labels& labels) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xffU) * 0x100000001b3ULL;  // separator: ("ab","c") != ("a","bc")
  };
  mix(rule);
  for (const auto& [k, v] : labels) {  // std::map: already sorted
    mix(k);
    mix(v);
  }
  return fmt::format("{:016x}", h);
}

Result<std::vector<Alert>> AlertBook::load() {
  {
    auto tx = store::Transaction::begin(db_);
    if (!tx) return fail(std::move(tx).error());
    auto st = db_.prepare("SELECT id, rule, labels_json FROM alerts WHERE fingerprint IS NULL");
    if (!st) return fail(std::move(st).error());
    auto rows = collect<std::pair<std::int64_t, std::string>>(
        *st, [](const store::Statement& s) -> Result<std::pair<std::int64_t, std::string>> {
          auto labels = labels_from_json(s.column_text(2), s.column_int64(0));
          if (!labels) return fail(std::move(labels).error());
          return std::pair{s.column_int64(0), fingerprint(s.column_text(1), *labels)};
        });
    if (!rows) return fail(std::move(rows).error());
    auto up = db_.prepare("UPDATE alerts SET fingerprint = ? WHERE id = ?");
    if (!up) return fail(std::move(up).error());
    for (const auto& [id, fp] : *rows) CARDIAC_TRY(up->bind_all(fp, id).run());
    CARDIAC_TRY(tx->commit());
  }
  return list(/*include_resolved=*/false, /*limit=*/100000);
}

Result<std::vector<AlertChange>> AlertBook::apply(
    const std::vector<rules::Transition>& transitions) {
  std::vector<AlertChange> changes;
  if (transitions.empty()) return changes;
  auto tx = store::Transaction::begin(db_);
  if (!tx) return fail(std::move(tx).error());
  auto silences = list_silences();
  if (!silences) return fail(std::move(silences).error());

  auto find = db_.prepare(
      "SELECT id, state, fired_ns, silenced FROM alerts "
      "WHERE fingerprint = ? AND state IN ('pending', 'firing')");
  auto insert = db_.prepare(
      "INSERT INTO alerts(rule, labels_json, state, severity, started_ns, fired_ns, last_value, "
      "description, fingerprint, silenced) VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING id");
  // COALESCE keeps the first firing time when a firing alert is updated again.
  auto update = db_.prepare(
      "UPDATE alerts SET state = ?, fired_ns = COALESCE(fired_ns, ?), resolved_ns = ?, "
      "last_value = ?, description = ?, severity = ?, silenced = ? WHERE id = ?");
  auto history = db_.prepare(
      "INSERT INTO alert_history(alert_id, time_ns, from_state, to_state, value) "
      "VALUES (?,?,?,?,?)");
  for (auto* st : {&find, &insert, &update, &history}) {
    if (!*st) return fail(std::move(*st).error());
  }

  for (const rules::Transition& t : transitions) {
    const std::string fp = fingerprint(t.rule, t.labels);
    const std::string_view severity = rules::severity_name(t.severity);
    const bool silenced = silenced_by(*silences, t.rule, severity, t.labels);

    std::optional<OpenAlert> open;
    find->bind_all(fp);
    auto row = find->step();
    if (!row) return fail(std::move(row).error());
    if (*row) {
      // The query selects open alerts only, so the state is pending or firing.
      open = OpenAlert{
          find->column_int64(0),
          rules::parse_alert_state(find->column_text(1)).value_or(rules::AlertState::kPending),
          find->column_opt_int64(2).value_or(t.at), find->column_int64(3) != 0};
    }
    find->reset();

    auto set_state = [&](rules::AlertState to_state, std::optional<TimeNs> fired,
                         std::optional<TimeNs> resolved, bool silence) -> Status {
      const std::string_view to = rules::alert_state_name(to_state);
      CARDIAC_TRY(
          update->bind_all(to, fired, resolved, t.value, t.description, severity, silence, open->id)
              .run());
      return history->bind_all(open->id, t.at, rules::alert_state_name(open->state), to, t.value)
          .run();
    };
    auto change = [&](ChangeStatus status, std::int64_t id, TimeNs started,
                      std::optional<TimeNs> ended, bool silence) {
      changes.push_back(AlertChange{status, id, fp, t.rule, t.severity, t.labels, t.description,
                                    t.value, started, ended, silence});
    };

    switch (t.to) {
      case rules::AlertState::kPending:
      case rules::AlertState::kFiring: {
        const bool firing = t.to == rules::AlertState::kFiring;
        if (open && (open->state == rules::AlertState::kFiring || !firing)) {
          // Already in (or past) this state, e.g. re-detected after a restart: refresh the
          // reading only, so that no duplicate alert, history row or notification appears.
          CARDIAC_TRY(update
                          ->bind_all(rules::alert_state_name(open->state), std::nullopt,
                                     std::nullopt, t.value, t.description, severity, open->silenced,
                                     open->id)
                          .run());
          break;
        }
        if (open) {  // pending -> firing
          CARDIAC_TRY(set_state(rules::AlertState::kFiring, t.at, std::nullopt, silenced));
          change(ChangeStatus::kFiring, open->id, t.at, std::nullopt, silenced);
          break;
        }
        const std::string_view to = rules::alert_state_name(firing ? rules::AlertState::kFiring
                                                                   : rules::AlertState::kPending);
        insert->bind_all(t.rule, labels_to_json(t.labels), to, severity, t.at,
                         firing ? std::optional<TimeNs>(t.at) : std::nullopt, t.value,
                         t.description, fp, silenced);
        auto ins = insert->step();
        if (!ins) return fail(std::move(ins).error());
        const std::int64_t id = insert->column_int64(0);
        insert->reset();
        CARDIAC_TRY(history->bind_all(id, t.at, "inactive", to, t.value).run());
        if (firing) change(ChangeStatus::kFiring, id, t.at, std::nullopt, silenced);
        break;
      }
      case rules::AlertState::kInactive:
      case rules::AlertState::kResolved:
        if (!open) break;  // nothing open to close (never recorded, or already closed)
        if (open->state == rules::AlertState::kPending) {
          CARDIAC_TRY(set_state(rules::AlertState::kInactive, std::nullopt, t.at, silenced));
          break;
        }
        {
          // A firing notice that was silenced gets no resolve notice either: the receiver
          // never heard of the alert.
          const bool quiet = silenced || open->silenced;
          CARDIAC_TRY(set_state(rules::AlertState::kResolved, std::nullopt, t.at, quiet));
          change(ChangeStatus::kResolved, open->id, open->fired_ns, t.at, quiet);
        }
        break;
    }
  }
  CARDIAC_TRY(tx->commit());
  return changes;
}

Result<std::vector<Alert>> AlertBook::query_alerts(std::string_view where, std::int64_t arg,
                                                   std::size_t limit) const {
  auto st = db_.prepare(
      fmt::format("SELECT {} FROM alerts WHERE {} ORDER BY started_ns DESC, id DESC LIMIT ?2",
                  kAlertColumns, where));
  if (!st) return fail(std::move(st).error());
  st->bind_all(arg, static_cast<std::int64_t>(limit));
  auto alerts = collect<Alert>(*st, read_alert);
  if (!alerts) return fail(std::move(alerts).error());
  // Open alerts show whether a silence covers them now, not when they last changed.
  if (std::any_of(alerts->begin(), alerts->end(), [](const Alert& a) { return a.open(); })) {
    auto silences = list_silences();
    if (!silences) return fail(std::move(silences).error());
    for (Alert& a : *alerts) {
      if (a.open()) {
        a.silenced = silenced_by(*silences, a.rule, severity_name(a.severity), a.labels);
      }
    }
  }
  return alerts;
}

Result<std::vector<Alert>> AlertBook::list(bool include_resolved, std::size_t limit) const {
  return query_alerts("(?1 OR state IN ('pending', 'firing'))", include_resolved ? 1 : 0, limit);
}

Result<Alert> AlertBook::get(std::int64_t id) const {
  auto alerts = query_alerts("id = ?1", id, 1);
  if (!alerts) return fail(std::move(alerts).error());
  if (alerts->empty()) return fail(Error::not_found(fmt::format("no alert with id {}", id)));
  return std::move(alerts->front());
}

Result<Alert> AlertBook::ack(std::int64_t id, std::string_view who) {
  auto st = db_.prepare("UPDATE alerts SET acked_by = ?, acked_ns = ? WHERE id = ?");
  if (!st) return fail(std::move(st).error());
  CARDIAC_TRY(st->bind_all(who, clock_.now(), id).run());
  if (db_.changes() == 0) return fail(Error::not_found(fmt::format("no alert with id {}", id)));
  return get(id);
}

Result<Silence> AlertBook::add_silence(std::string_view matcher_text, DurationNs duration,
                                       std::string_view who, std::string_view comment) {
  auto matchers = parse_matchers(matcher_text);
  if (!matchers) return fail(std::move(matchers).error());
  if (duration <= 0) {
    return fail(
        Error::invalid(fmt::format("silence duration must be positive, got {} ns", duration)));
  }
  const TimeNs now = clock_.now();
  auto st = db_.prepare(
      "INSERT INTO silences(matchers_json, starts_ns, ends_ns, created_by, comment, created_ns) "
      "VALUES (?,?,?,?,?,?) RETURNING id");
  if (!st) return fail(std::move(st).error());
  st->bind_all(matchers_to_json(*matchers), now, now + duration, who, comment, now);
  auto row = st->step();
  if (!row) return fail(std::move(row).error());
  const std::int64_t id = st->column_int64(0);
  st->reset();
  return get_silence(id);
}

Result<std::vector<Silence>> AlertBook::query_silences(std::string_view where,
                                                       std::int64_t arg) const {
  auto st = db_.prepare(
      fmt::format("SELECT {} FROM silences WHERE {} ORDER BY id DESC", kSilenceColumns, where));
  if (!st) return fail(std::move(st).error());
  st->bind_all(arg);
  return collect<Silence>(*st, read_silence);
}

Result<std::vector<Silence>> AlertBook::list_silences(bool include_expired) const {
  if (include_expired) return query_silences("?1 = ?1", 0);
  return query_silences("starts_ns <= ?1 AND ends_ns > ?1", clock_.now());
}

Result<Silence> AlertBook::get_silence(std::int64_t id) const {
  auto s = query_silences("id = ?1", id);
  if (!s) return fail(std::move(s).error());
  if (s->empty()) return fail(Error::not_found(fmt::format("no silence with id {}", id)));
  return std::move(s->front());
}

Result<Silence> AlertBook::expire_silence(std::int64_t id) {
  auto st = db_.prepare("UPDATE silences SET ends_ns = min(ends_ns, ?) WHERE id = ?");
  if (!st) return fail(std::move(st).error());
  CARDIAC_TRY(st->bind_all(clock_.now(), id).run());
  if (db_.changes() == 0) return fail(Error::not_found(fmt::format("no silence with id {}", id)));
  return get_silence(id);
}

}  // namespace cardiac::alerts
