// SPDX-License-Identifier: Apache-2.0
// Evaluates alert rules on each sample and reports state changes per (rule, label set).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "rules/counter_window.h"
#include "rules/rule.h"
#include "rules/sample_view.h"

namespace cardiac::rules {

// kResolved behaves like kInactive for the next evaluation; it exists so that "was firing, now
// clear" can be told apart from "never fired".
enum class AlertState { kInactive, kPending, kFiring, kResolved };
// "inactive", "pending", "firing", "resolved": the stored and shown spelling. parse_alert_state
// is its inverse (nullopt for any other text).
std::string_view alert_state_name(AlertState s);
std::optional<AlertState> parse_alert_state(std::string_view name);

struct Transition {
  std::string rule;
  Labels labels;  // the series' labels plus the rule's own labels
  AlertState from = AlertState::kInactive;
  AlertState to = AlertState::kInactive;  // firing → firing: an increase alert's count grew
  double value = 0;  // the reading that caused it (rate per `per`, seconds since seen for absence)
  TimeNs at = 0;
  Severity severity = Severity::kWarning;
  std::string description;  // rendered
};

struct RuleError {
  std::string rule;
  Error error;
};

// A series with no point for this long is dropped: pending ones go inactive, firing ones resolve.
// Shorter gaps keep the state as it was, because one failed read is not evidence of recovery.
constexpr DurationNs kStaleAfter = 5 * 60 * kNsPerSec;

class RuleEngine {
 public:
  explicit RuleEngine(std::vector<Rule> rules);
  ~RuleEngine();
  RuleEngine(RuleEngine&&) noexcept;
  RuleEngine& operator=(RuleEngine&&) noexcept;

  // Runs every usable rule on `view` at time `now` (non-decreasing across calls) and returns
  // the state changes. A rule that cannot be evaluated is set aside; its error is reported once
  // through take_errors() and the other rules carry on.
  std::vector<Transition> evaluate(const SampleView& view, TimeNs now);

  // Takes over an alert left open (pending or firing) before a restart, with its labels as
  // stored (the series' plus the rule's own) and its first-seen time, so that the next
  // evaluation continues it (no new alert) or closes it: a false condition resolves it, and so
  // does a series missing from that evaluation, since nothing else would ever close it.
  // A pending one keeps `started` for its `for`. False when no usable rule has this name.
  bool adopt(std::string_view rule, const Labels& labels, AlertState state, TimeNs started,
             double value);

  // Errors not yet taken (each broken rule once).
  std::vector<RuleError> take_errors();

  // Series currently firing, for status pages: (rule, labels key).
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> firing() const;
  [[nodiscard]] const std::vector<Rule>& rules() const { return rules_; }

 private:
  struct Series {
    Labels labels;
    AlertState state = AlertState::kInactive;
    TimeNs pending_since = 0;
    TimeNs last_seen = 0;
    double last_value = 0;
    std::optional<double> last_threshold;
    CounterWindow history;      // rate and increase rules: the samples within the window
    double occurrences = 0;     // increase rules: counted since the alert started
    bool adopted = false;       // taken over from before a restart and not seen since
    std::uint64_t seen_in = 0;  // the last evaluation (RuleState::passes) that saw it
  };
  struct Observation {
    double value = 0;
    std::optional<double> threshold;
    bool condition = false;
    bool holds_firing = false;    // hysteresis: stay firing while this is true
    std::optional<double> shown;  // the value alerts carry, when not `value` (a count)
    bool refresh = false;         // firing and the shown value changed: say so
  };
  struct RuleState {
    bool broken = false;
    std::optional<TimeNs> first_eval;
    std::optional<TimeNs> metric_last_seen;  // absence rules: any point of the metric
    std::map<std::string, Series> series;
    std::uint64_t passes = 0;  // evaluations of a non-absence rule so far
  };

  struct Index;
  Status evaluate_rule(std::size_t i, const Index& index, TimeNs now, std::vector<Transition>& out);
  static void step(const Rule& rule, Series& s, const std::optional<Observation>& obs,
                   DurationNs hold, TimeNs now, std::vector<Transition>& out);
  void mark_broken(std::size_t i, Error e);

  std::vector<Rule> rules_;
  std::vector<RuleState> states_;
  std::vector<RuleError> errors_;
  std::unique_ptr<Index> index_;  // kept between evaluations (engine.cpp)
};

// Checks a rule against the metric catalog (names, scope, counter-ness). The engine runs it on
// every rule; exposed so that `cardiac` can warn at load time too.
[[nodiscard]] Status validate_rule(const Rule& rule);

}  // namespace cardiac::rules
