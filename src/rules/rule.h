// SPDX-License-Identifier: Apache-2.0
// The alert rule model: what a [[rule]] table says, plus comparison and description rendering.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/severity.h"
#include "rules/sample_view.h"

namespace cardiac::rules {

enum class Op { kGt, kGe, kLt, kLe, kEq, kNe };
// kRate: a counter's increase per `per`, measured over `window` (PromQL rate() scaled);
// kIncrease: a counter's increase over `window` (PromQL increase()); while an increase alert
// fires its value is the number of occurrences since it started, and it stays one alert.
enum class RuleKind { kThreshold, kRate, kAbsence, kIncrease };
using cardiac::Severity;  // core/severity.h

std::string_view op_name(Op op);  // ">", ">=", …
std::optional<Op> parse_op(std::string_view s);
std::string_view kind_name(RuleKind k);
using cardiac::parse_severity;
using cardiac::severity_name;

// `value op threshold`.
bool compare(Op op, double value, double threshold);

struct Rule {
  std::string name;  // unique within a rule set: alerts are keyed by (name, labels)
  RuleKind kind = RuleKind::kThreshold;
  std::string metric;  // empty only for an absence rule with expected_gpus
  Op op = Op::kGt;
  // Exactly one of threshold and threshold_metric is set for threshold and rate rules. A
  // threshold_metric is read from the point with the same labels (the same GPU), plus the offset.
  std::optional<double> threshold;
  std::string threshold_metric;
  double threshold_offset = 0;
  // Threshold/rate: the condition must hold this long before firing. Absence: how long a series
  // may go without a point.
  DurationNs for_ns = 0;
  // Guard: the condition only counts while the same-labels point of when_metric satisfies
  // `when_op when_threshold` ("held by a process", "under load"); no point means not satisfied.
  std::string when_metric;
  Op when_op = Op::kGt;
  double when_threshold = 0;
  // Hysteresis: once firing, the alert stays firing while `value op clear` holds.
  std::optional<double> clear;
  Severity severity = Severity::kWarning;
  std::optional<Scope> scope;  // absent: the metric's own scope
  Labels labels;               // added to every transition of this rule
  std::string description;     // {value}, {threshold}, {gpu}, {metric}, {rule}, {<label>}
  // Rate rules: the increase is expressed per `per`, measured over the last `window`.
  // Increase rules: the increase over the last `window` (per_ns unused).
  DurationNs per_ns = 60 * kNsPerSec;
  DurationNs window_ns = 60 * kNsPerSec;
  // Absence rules: fire while fewer GPUs than this are present (reads gpu_count).
  std::optional<unsigned> expected_gpus;
  std::string origin;  // "rules.toml:12:1", for error messages
};

// Fills the placeholders of `rule.description`; unknown placeholders are left as written so that
// a typo shows in the alert instead of vanishing. {uuid} of a GPU whose UUID could not be read
// (a lost GPU) reads "uuid unknown".
std::string render_description(const Rule& rule, const Labels& labels, double value,
                               std::optional<double> threshold);

// Numbers as people read them: "85", "8.33".
std::string format_number(double v);

}  // namespace cardiac::rules
