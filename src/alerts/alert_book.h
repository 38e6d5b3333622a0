// SPDX-License-Identifier: Apache-2.0
// The alert book: turns rule transitions into stored alerts, with history, acks and silences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alerts/silence.h"
#include "core/clock.h"
#include "core/result.h"
#include "rules/engine.h"
#include "store/db.h"

namespace cardiac::alerts {

struct Alert {
  std::int64_t id = 0;
  std::string rule;
  rules::Labels labels;
  // Stored as rules::alert_state_name. Inactive closes a pending alert that cleared before it
  // fired; resolved closes a firing one. Only pending and firing alerts are open.
  rules::AlertState state = rules::AlertState::kPending;
  Severity severity = Severity::kWarning;
  TimeNs started_ns = 0;  // first seen, pending or firing
  std::optional<TimeNs> fired_ns;
  std::optional<TimeNs> resolved_ns;  // also set when a pending alert goes inactive
  std::optional<double> last_value;
  std::string description;
  std::optional<std::string> acked_by;
  std::optional<TimeNs> acked_ns;
  std::string fingerprint;
  // Open alerts: matched by a silence active now. Closed ones: as decided at their last change.
  bool silenced = false;

  [[nodiscard]] bool open() const {
    return state == rules::AlertState::kPending || state == rules::AlertState::kFiring;
  }
};

enum class ChangeStatus { kFiring, kResolved };
std::string_view change_status_name(ChangeStatus s);

// What a notifier needs for one alert that started or stopped firing.
struct AlertChange {
  ChangeStatus status = ChangeStatus::kFiring;
  std::int64_t alert_id = 0;
  std::string fingerprint;
  std::string rule;
  Severity severity = Severity::kWarning;
  rules::Labels labels;
  std::string description;
  double value = 0;
  TimeNs started_ns = 0;  // when it began firing
  std::optional<TimeNs> ended_ns;
  bool silenced = false;  // stored and shown, but the agent does not notify
};

// Identity of an alert across evaluations and restarts: FNV-1a 64 of the rule name and the
// sorted labels, as 16 hex digits. Not std::hash, whose value may change between builds.
std::string fingerprint(std::string_view rule, const rules::Labels& labels);

// The database is the only state: every call reads what it needs, so a CLI ack or silence
// written by another process is seen at once and a failed apply() leaves nothing to undo.
// Not thread-safe, like the Db it uses.
class AlertBook {
 public:
  AlertBook(store::Db& db, const Clock& clock) : db_(db), clock_(clock) {}

  // Call at start: returns the open alerts kept from before a restart, so that re-fired
  // transitions from a fresh rule engine de-duplicate against them and a resolve closes them.
  // Also fingerprints rows written before the fingerprint column existed.
  [[nodiscard]] Result<std::vector<Alert>> load();

  // Records `transitions` (in order) in one transaction and returns the changes to notify.
  // A firing alert that fires again, or a pending one seen pending again, changes nothing;
  // a resolve for an alert that is not open is ignored. On error nothing was written.
  [[nodiscard]] Result<std::vector<AlertChange>> apply(
      const std::vector<rules::Transition>& transitions);

  // Newest first. Closed alerts only with include_resolved, at most `limit` rows in all.
  [[nodiscard]] Result<std::vector<Alert>> list(bool include_resolved,
                                                std::size_t limit = 1000) const;
  // NotFound for an unknown id.
  [[nodiscard]] Result<Alert> get(std::int64_t id) const;
  // Marks the alert as seen by `who`; its state does not change. NotFound for an unknown id.
  [[nodiscard]] Result<Alert> ack(std::int64_t id, std::string_view who);

  // Silences alerts matching `matcher_text` from now for `duration` (> 0).
  [[nodiscard]] Result<Silence> add_silence(std::string_view matcher_text, DurationNs duration,
                                            std::string_view who, std::string_view comment);
  // Active silences, or all of them (newest first) with include_expired.
  [[nodiscard]] Result<std::vector<Silence>> list_silences(bool include_expired = false) const;
  // Ends a silence now; it is kept for the record. NotFound for an unknown id.
  [[nodiscard]] Result<Silence> expire_silence(std::int64_t id);

 private:
  [[nodiscard]] Result<std::vector<Alert>> query_alerts(std::string_view where, std::int64_t arg,
                                                        std::size_t limit) const;
  [[nodiscard]] Result<std::vector<Silence>> query_silences(std::string_view where,
                                                            std::int64_t arg) const;
  [[nodiscard]] Result<Silence> get_silence(std::int64_t id) const;

  store::Db& db_;
  const Clock& clock_;
};

}  // namespace cardiac::alerts
