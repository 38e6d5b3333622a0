// SPDX-License-Identifier: Apache-2.0
// TOML → Rule, strict: unknown keys, wrong types and keys that do not fit the rule kind are errors.
#include "rules/parse.h"

#include <set>

#include <toml++/toml.h>

#include "config/toml_reader.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::rules {
namespace {

using config::TableReader;

std::string where(std::string_view origin, const toml::source_region& r) {
  return fmt::format("{}:{}:{}", origin, r.begin.line, r.begin.column);
}

// The keys a [[rule]] table may have.
const std::set<std::string_view>& rule_keys() {
  static const std::set<std::string_view> kAllowed = {"name",
                                                      "kind",
                                                      "metric",
                                                      "op",
                                                      "threshold",
                                                      "threshold_metric",
                                                      "threshold_offset",
                                                      "for",
                                                      "clear",
                                                      "severity",
                                                      "scope",
                                                      "labels",
                                                      "description",
                                                      "per",
                                                      "window",
                                                      "expected_gpus",
                                                      "when_metric",
                                                      "when_op",
                                                      "when_threshold"};
  return kAllowed;
}

// A rule's durations are strings only ("30s"), unlike cardiac.toml's, which also take seconds.
Result<std::optional<DurationNs>> read_duration(const TableReader& r, std::string_view key,
                                                bool allow_zero) {
  const toml::node* n = r.node(key);
  if (!n) return std::optional<DurationNs>{};
  std::optional<std::int64_t> ns;
  if (auto s = n->value<std::string>()) ns = parse_duration_ns(*s);
  if (!ns || *ns < 0 || (!allow_zero && *ns == 0)) {
    return fail(r.invalid(key, "must be a duration such as \"30s\", \"5m\" or \"1h\""));
  }
  return ns;
}

// Each label's own error names it ('rule[0].labels.gpu').
Result<Labels> read_labels(const TableReader& r, std::string_view key) {
  Labels out;
  const toml::node* n = r.node(key);
  if (!n) return out;
  const toml::table* lt = n->as_table();
  if (!lt) return fail(r.invalid(key, "must be a table of strings"));
  for (const auto& [k, v] : *lt) {
    auto s = v.value<std::string>();
    if (!s) return fail(r.invalid_at(fmt::format("{}.{}", key, k.str()), v, "must be a string"));
    out[std::string(k.str())] = *s;
  }
  return out;
}

// "increase(name[10m])" / "rate(name[5m])", split; nullopt for a plain metric name.
struct CounterFunction {
  bool rate = false;
  std::string name;
  std::optional<DurationNs> window;
};
std::optional<CounterFunction> counter_function(std::string_view text) {
  CounterFunction f;
  std::string_view rest;
  if (text.starts_with("increase(")) {
    rest = text.substr(9);
  } else if (text.starts_with("rate(")) {
    f.rate = true;
    rest = text.substr(5);
  } else {
    return std::nullopt;
  }
  const auto open = rest.find('[');
  const auto close = rest.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      rest.substr(close) != "])") {
    f.name = std::string(rest.substr(0, rest.find_first_of("[)")));
    return f;  // window missing: the caller says so
  }
  f.name = std::string(rest.substr(0, open));
  if (auto ns = parse_duration_ns(rest.substr(open + 1, close - open - 1))) f.window = ns;
  return f;
}

// Shorthand: unwrap a Result into `dst` or return its error.
#define RULES_READ(dst, expr)                           \
  do {                                                  \
    auto rules_read_ = (expr);                          \
    if (!rules_read_) return fail(rules_read_.error()); \
    dst = std::move(*rules_read_);                      \
  } while (0)

Status read_when(const TableReader& r, Rule& rule) {
  std::optional<std::string> metric, op;
  std::optional<double> threshold;
  RULES_READ(metric, r.string("when_metric"));
  RULES_READ(op, r.string("when_op"));
  RULES_READ(threshold, r.number("when_threshold"));
  if (!metric) {
    for (auto key : {"when_op", "when_threshold"}) {
      if (r.has(key)) return fail(r.invalid(key, "only applies with 'when_metric'"));
    }
    return {};
  }
  if (!op || !threshold)
    return fail(r.missing("when_op", "and 'when_threshold' with 'when_metric'"));
  auto parsed = parse_op(*op);
  if (!parsed) return fail(r.invalid("when_op", "must be one of >, >=, <, <=, ==, !="));
  rule.when_metric = *metric;
  rule.when_op = *parsed;
  rule.when_threshold = *threshold;
  return {};
}

Status read_kind_specific(const TableReader& r, Rule& rule, bool shorthand_window) {
  const bool counter_kind = rule.kind == RuleKind::kRate || rule.kind == RuleKind::kIncrease;
  if (!counter_kind && r.has("window")) {
    return fail(r.invalid("window", "only applies to kind = \"rate\" or \"increase\""));
  }
  if (rule.kind != RuleKind::kRate && r.has("per")) {
    return fail(r.invalid("per", "only applies to kind = \"rate\""));
  }
  if (rule.kind != RuleKind::kAbsence && r.has("expected_gpus")) {
    return fail(r.invalid("expected_gpus", "only applies to kind = \"absence\""));
  }
  if (rule.kind == RuleKind::kAbsence) {
    for (auto key : {"op", "threshold", "threshold_metric", "threshold_offset", "clear",
                     "when_metric", "when_op", "when_threshold"}) {
      if (r.has(key)) return fail(r.invalid(key, "does not apply to kind = \"absence\""));
    }
    std::optional<double> expected;
    RULES_READ(expected, r.number("expected_gpus"));
    if (expected) {
      // Range first: casting a double beyond unsigned's range is undefined.
      if (*expected < 1 || *expected > 1e6 ||
          *expected != static_cast<double>(static_cast<unsigned>(*expected))) {
        return fail(r.invalid("expected_gpus", "must be a whole number of at least 1"));
      }
      rule.expected_gpus = static_cast<unsigned>(*expected);
      if (!rule.metric.empty()) {
        return fail(
            r.invalid("metric", "cannot be combined with 'expected_gpus' (it reads gpu_count)"));
      }
    } else if (rule.metric.empty()) {
      return fail(r.missing("metric", "(or 'expected_gpus')"));
    } else if (rule.for_ns <= 0) {
      return fail(r.missing("for", "(how long the metric may go without a point)"));
    }
    return {};
  }
  if (rule.metric.empty()) return fail(r.missing("metric", ""));
  std::optional<std::string> op;
  RULES_READ(op, r.string("op"));
  if (!op) return fail(r.missing("op", "(one of >, >=, <, <=, ==, !=)"));
  auto parsed_op = parse_op(*op);
  if (!parsed_op) return fail(r.invalid("op", "must be one of >, >=, <, <=, ==, !="));
  rule.op = *parsed_op;
  RULES_READ(rule.threshold, r.number("threshold"));
  std::optional<std::string> tm;
  RULES_READ(tm, r.string("threshold_metric"));
  rule.threshold_metric = tm.value_or("");
  if (rule.threshold.has_value() == !rule.threshold_metric.empty()) {
    return fail(r.missing("threshold", "or 'threshold_metric' (exactly one)"));
  }
  std::optional<double> offset;
  RULES_READ(offset, r.number("threshold_offset"));
  if (offset && rule.threshold_metric.empty()) {
    return fail(r.invalid("threshold_offset", "only applies with 'threshold_metric'"));
  }
  rule.threshold_offset = offset.value_or(0);
  CARDIAC_TRY(read_when(r, rule));
  RULES_READ(rule.clear, r.number("clear"));
  if (rule.clear) {
    if (!rule.threshold) return fail(r.invalid("clear", "needs a numeric 'threshold'"));
    // The clear level must sit on the safe side of the threshold, else the alert would resolve
    // while its own condition still holds.
    const bool upward = rule.op == Op::kGt || rule.op == Op::kGe;
    const bool downward = rule.op == Op::kLt || rule.op == Op::kLe;
    if (!upward && !downward) return fail(r.invalid("clear", "needs op >, >=, < or <="));
    if ((upward && *rule.clear > *rule.threshold) || (downward && *rule.clear < *rule.threshold)) {
      return fail(r.invalid("clear", "must be on the clear side of 'threshold'"));
    }
  }
  if (counter_kind && !shorthand_window) {
    std::optional<DurationNs> per, window;
    RULES_READ(per, read_duration(r, "per", false));
    RULES_READ(window, read_duration(r, "window", false));
    if (rule.kind == RuleKind::kRate) rule.per_ns = per.value_or(60 * kNsPerSec);
    rule.window_ns = window.value_or(rule.kind == RuleKind::kRate ? rule.per_ns : 60 * kNsPerSec);
  } else if (counter_kind) {
    for (auto key : {"per", "window"}) {
      if (r.has(key)) return fail(r.invalid(key, "is already given by the metric's [window]"));
    }
  }
  return {};
}

Result<Rule> read_rule(const toml::table& t, std::string_view origin, std::size_t index) {
  const TableReader r(t, fmt::format("rule[{}]", index), origin);
  CARDIAC_TRY(r.only(rule_keys()));
  Rule rule;
  rule.origin = r.origin();
  std::optional<std::string> s;
  RULES_READ(s, r.string("name"));
  if (!s || s->empty()) return fail(r.missing("name", "(a non-empty string)"));
  rule.name = *s;
  RULES_READ(s, r.string("kind"));
  if (s) {
    if (*s == "threshold")
      rule.kind = RuleKind::kThreshold;
    else if (*s == "rate")
      rule.kind = RuleKind::kRate;
    else if (*s == "absence")
      rule.kind = RuleKind::kAbsence;
    else if (*s == "increase")
      rule.kind = RuleKind::kIncrease;
    else
      return fail(
          r.invalid("kind", "must be \"threshold\", \"rate\", \"increase\" or \"absence\""));
  }
  const bool explicit_kind = s.has_value();
  RULES_READ(s, r.string("metric"));
  rule.metric = s.value_or("");
  // PromQL's spelling: metric = "increase(gpu_xid_errors_total[10m])" or "rate(…[5m])" (per
  // second, as Prometheus' rate()).
  bool shorthand_window = false;
  if (auto fn = counter_function(rule.metric)) {
    const RuleKind kind = fn->rate ? RuleKind::kRate : RuleKind::kIncrease;
    if (explicit_kind && rule.kind != kind) {
      return fail(r.invalid("metric", fmt::format("is a {} expression but kind = \"{}\"",
                                                  kind_name(kind), kind_name(rule.kind))));
    }
    if (!fn->window || *fn->window <= 0) {
      return fail(r.invalid("metric", "needs a window such as [5m] inside the parentheses"));
    }
    rule.kind = kind;
    rule.metric = fn->name;
    rule.window_ns = *fn->window;
    if (fn->rate) rule.per_ns = kNsPerSec;
    shorthand_window = true;
  }
  std::optional<DurationNs> for_ns;
  RULES_READ(for_ns, read_duration(r, "for", true));
  rule.for_ns = for_ns.value_or(0);
  RULES_READ(s, r.string("severity"));
  if (s) {
    auto sev = parse_severity(*s);
    if (!sev) return fail(r.invalid("severity", "must be \"info\", \"warning\" or \"critical\""));
    rule.severity = *sev;
  }
  RULES_READ(s, r.string("scope"));
  if (s) {
    if (*s == "gpu")
      rule.scope = Scope::kGpu;
    else if (*s == "host")
      rule.scope = Scope::kHost;
    else
      return fail(r.invalid("scope", "must be \"gpu\" or \"host\""));
  }
  RULES_READ(rule.labels, read_labels(r, "labels"));
  RULES_READ(s, r.string("description"));
  rule.description = s.value_or("");
  CARDIAC_TRY(read_kind_specific(r, rule, shorthand_window));
  return rule;
}

#undef RULES_READ

}  // namespace

Result<std::vector<Rule>> parse_rules(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return fail(Error::parse(std::string(e.description()), where(origin, e.source())));
  }
  std::vector<Rule> rules;
  for (const auto& [key, node] : root) {
    if (key.str() != "rule") {
      return fail(
          Error::invalid(fmt::format("unknown key '{}'", key.str()), where(origin, key.source())));
    }
    const toml::array* arr = node.as_array();
    if (!arr || !arr->is_array_of_tables()) {
      return fail(Error::invalid("'rule' must be an array of tables ([[rule]])",
                                 where(origin, node.source())));
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < arr->size(); ++i) {
      auto rule = read_rule(*arr->get(i)->as_table(), origin, i);
      if (!rule) return fail(rule.error());
      if (!names.insert(rule->name).second) {
        return fail(
            Error::invalid(fmt::format("duplicate rule name '{}'", rule->name), rule->origin));
      }
      rules.push_back(std::move(*rule));
    }
  }
  return rules;
}

}  // namespace cardiac::rules
