// SPDX-License-Identifier: Apache-2.0
// The alert state machine: inactive → pending → firing → resolved, per (rule, label set).
#include "rules/engine.h"

#include <algorithm>
#include <exception>
#include <set>
#include <tuple>

#include "core/format.h"

namespace cardiac::rules {

// Points of one sample by metric, and by (metric, labels) for threshold_metric look-ups. Kept by
// the engine between evaluations: its map's nodes and vectors are reused rather than made anew
// at every sample (they were a tenth of the agent's allocations).
struct RuleEngine::Index {
  struct SeriesValue {
    std::string_view metric;
    std::string_view key;  // the point's Labels::key()
    double value = 0;
  };
  // Every metric seen so far (the catalog bounds them); a metric absent from this sample has an
  // empty vector.
  std::map<std::string, std::vector<const Point*>, std::less<>> by_metric;
  // Only for `looked_up`, the metrics some rule reads as a threshold or a guard: keying every
  // point of a sample by its labels was a sixth of the agent's rule time. Sorted; a (metric,
  // labels) given twice answers with the later point.
  std::vector<SeriesValue> by_series;
  std::set<std::string, std::less<>> looked_up;
  TimeNs at = 0;

  explicit Index(const std::vector<Rule>& rules) {
    for (const Rule& r : rules) {
      if (!r.threshold_metric.empty()) looked_up.insert(r.threshold_metric);
      if (!r.when_metric.empty()) looked_up.insert(r.when_metric);
    }
  }
  // Points into `v`, which must outlive the use of what it indexes.
  void build(const SampleView& v) {
    at = v.at;
    for (auto& [metric, points] : by_metric) points.clear();
    by_series.clear();
    for (const Point& p : v.points) {
      auto it = by_metric.find(p.metric);
      if (it == by_metric.end())
        it = by_metric.emplace(p.metric, std::vector<const Point*>{}).first;
      it->second.push_back(&p);
      if (looked_up.contains(p.metric)) by_series.push_back({p.metric, p.labels.key(), p.value});
    }
    std::stable_sort(by_series.begin(), by_series.end(), less);
  }
  const std::vector<const Point*>& points(const std::string& metric) const {
    static const std::vector<const Point*> kNone;
    auto it = by_metric.find(metric);
    return it == by_metric.end() ? kNone : it->second;
  }
  std::optional<double> value(const std::string& metric, const std::string& key) const {
    const SeriesValue probe{metric, key, 0};
    auto it = std::upper_bound(by_series.begin(), by_series.end(), probe, less);
    if (it == by_series.begin()) return std::nullopt;
    --it;
    if (it->metric != metric || it->key != key) return std::nullopt;
    return it->value;
  }
  static bool less(const SeriesValue& a, const SeriesValue& b) {
    return std::tie(a.metric, a.key) < std::tie(b.metric, b.key);
  }
};

namespace {

// A series' labels less its UUID: the same GPU whether or not its UUID could be read.
std::string identity_key(const Labels& labels) {
  Labels rest = labels;
  rest.erase("uuid");
  return labels_key(rest);
}

// The metric a rule reads: expected-GPU rules read gpu_count.
const std::string& source_metric(const Rule& r) {
  static const std::string kGpuCount = "gpu_count";
  return r.expected_gpus ? kGpuCount : r.metric;
}

// Counter increase over the samples, a drop counting as a reset to zero (the driver reloaded or
// the NIC was re-created), so the new value is all increase since the reset.
// A rule's `for` as it was written: "5m", "1h", "30s".
std::string duration_text(DurationNs d) {
  if (d % kNsPerSec != 0) return fmt::format("{}ms", d / kNsPerMs);
  const std::int64_t s = d / kNsPerSec;
  if (s != 0 && s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s != 0 && s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

}  // namespace

namespace {

struct StateName {
  AlertState state;
  std::string_view name;
};

constexpr StateName kStateNames[] = {{AlertState::kInactive, "inactive"},
                                     {AlertState::kPending, "pending"},
                                     {AlertState::kFiring, "firing"},
                                     {AlertState::kResolved, "resolved"}};

}  // namespace

std::string_view alert_state_name(AlertState s) {
  for (const StateName& n : kStateNames) {
    if (n.state == s) return n.name;
  }
  return "?";
}

std::optional<AlertState> parse_alert_state(std::string_view name) {
  for (const StateName& n : kStateNames) {
    if (n.name == name) return n.state;
  }
  return std::nullopt;
}

Status validate_rule(const Rule& rule) {
  const std::string& metric = source_metric(rule);
  const MetricInfo* m = find_metric(metric);
  if (!m) return fail(Error::invalid(fmt::format("unknown metric '{}'", metric), rule.origin));
  if (rule.scope && *rule.scope != m->scope) {
    return fail(Error::invalid(fmt::format("metric '{}' has scope {}, the rule says {}", metric,
                                           scope_name(m->scope), scope_name(*rule.scope)),
                               rule.origin));
  }
  if ((rule.kind == RuleKind::kRate || rule.kind == RuleKind::kIncrease) && !m->counter) {
    return fail(Error::invalid(
        fmt::format("kind = \"{}\" needs a counter; '{}' is a gauge", kind_name(rule.kind), metric),
        rule.origin));
  }
  for (const auto& [key, name] : {std::pair{"threshold_metric", &rule.threshold_metric},
                                  std::pair{"when_metric", &rule.when_metric}}) {
    if (name->empty()) continue;
    const MetricInfo* t = find_metric(*name);
    if (!t) return fail(Error::invalid(fmt::format("unknown {} '{}'", key, *name), rule.origin));
    if (t->scope != m->scope) {
      return fail(Error::invalid(
          fmt::format("{} '{}' is not in the scope of '{}'", key, t->name, metric), rule.origin));
    }
  }
  return {};
}

RuleEngine::RuleEngine(std::vector<Rule> rules)
    : rules_(std::move(rules)), states_(rules_.size()), index_(std::make_unique<Index>(rules_)) {
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    if (auto ok = validate_rule(rules_[i]); !ok) mark_broken(i, ok.error());
  }
}

void RuleEngine::mark_broken(std::size_t i, Error e) {
  if (states_[i].broken) return;
  states_[i].broken = true;
  errors_.push_back(RuleError{rules_[i].name, std::move(e)});
}

RuleEngine::~RuleEngine() = default;
RuleEngine::RuleEngine(RuleEngine&&) noexcept = default;
RuleEngine& RuleEngine::operator=(RuleEngine&&) noexcept = default;

bool RuleEngine::adopt(std::string_view rule, const Labels& labels, AlertState state,
                       TimeNs started, double value) {
  if (state != AlertState::kPending && state != AlertState::kFiring) return false;
  auto it =
      std::find_if(rules_.begin(), rules_.end(), [&](const Rule& r) { return r.name == rule; });
  if (it == rules_.end()) return false;
  const std::size_t i = static_cast<std::size_t>(it - rules_.begin());
  if (states_[i].broken) return false;
  // Transitions carry the rule's labels too; the series is known by its own.
  Labels own = labels;
  for (const auto& [k, v] : it->labels) {
    auto l = own.find(k);
    if (l != own.end() && l->second == v) own.erase(k);
  }
  Series& s = states_[i].series[labels_key(own)];
  s.labels = std::move(own);
  s.state = state;
  s.pending_since = started;
  // An absence alert holds while nothing is seen: as if last seen when its `for` began.
  s.last_seen = it->kind == RuleKind::kAbsence ? started - it->for_ns : started;
  s.last_value = value;
  s.occurrences = value;
  s.adopted = true;
  return true;
}

std::vector<RuleError> RuleEngine::take_errors() {
  std::vector<RuleError> out;
  out.swap(errors_);
  return out;
}

std::vector<std::pair<std::string, std::string>> RuleEngine::firing() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    for (const auto& [key, s] : states_[i].series) {
      if (s.state == AlertState::kFiring) out.emplace_back(rules_[i].name, key);
    }
  }
  return out;
}

std::vector<Transition> RuleEngine::evaluate(const SampleView& view, TimeNs now) {
  index_->build(view);
  const Index& index = *index_;
  std::vector<Transition> out;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    if (states_[i].broken) continue;
    // Guarded per rule: a failure (or a throw from a bug) sets this rule aside, not the others.
    // Transitions it produced before failing are dropped with it, so none is half-reported.
    std::vector<Transition> mine;
    try {
      if (auto ok = evaluate_rule(i, index, now, mine); !ok) {
        mark_broken(i, ok.error());
        continue;
      }
    } catch (const std::exception& e) {
      mark_broken(i, Error::internal(fmt::format("rule evaluation threw: {}", e.what())));
      continue;
    }
    for (auto& t : mine) out.push_back(std::move(t));
  }
  return out;
}

Status RuleEngine::evaluate_rule(std::size_t i, const Index& index, TimeNs now,
                                 std::vector<Transition>& out) {
  const Rule& r = rules_[i];
  RuleState& st = states_[i];
  if (!st.first_eval) st.first_eval = now;
  const std::vector<const Point*>& points = index.points(source_metric(r));
  const MetricInfo* info = find_metric(source_metric(r));
  const Scope scope = info->scope;
  const bool counter_rule = r.kind == RuleKind::kRate || r.kind == RuleKind::kIncrease;

  if (r.kind == RuleKind::kAbsence && !r.expected_gpus) {
    // A catch-all series stands for "the metric as a whole" until some point has been seen.
    if (st.series.empty()) st.series[""].last_seen = *st.first_eval;
    for (const Point* p : points) {
      Series& s = st.series[p->labels.key()];
      s.labels = p->labels;
      s.last_seen = now;
    }
    if (!points.empty()) st.series[""].last_seen = now;
    for (auto& [key, s] : st.series) {
      Observation o;
      o.value = static_cast<double>(now - s.last_seen) / kNsPerSec;
      o.condition = now - s.last_seen >= r.for_ns;
      o.holds_firing = o.condition;
      step(r, s, o, 0, now, out);
    }
    // Once labelled series exist they speak for themselves; the catch-all (now resolved) goes.
    const bool unlabelled =
        std::any_of(points.begin(), points.end(), [](const Point* p) { return p->labels.empty(); });
    if (!points.empty() && !unlabelled) {
      auto it = st.series.find("");
      if (it != st.series.end() && it->second.state != AlertState::kFiring) st.series.erase(it);
    }
    return {};
  }

  // Every rule looks at every point of its metric at every sample: what a series keeps is
  // marked seen by the pass's number and its labels copied only when they change, rather than
  // a set of keys and a copy of the labels per point.
  const std::uint64_t pass = ++st.passes;
  for (const Point* p : points) {
    // Scope is a property of the metric; a mislabelled point is skipped rather than trusted.
    if ((scope == Scope::kGpu) != (p->labels.count("gpu") > 0)) continue;
    const std::string& key = p->labels.key();
    Series& s = st.series[key];
    if (s.labels != p->labels) s.labels = p->labels;
    s.last_seen = now;
    s.adopted = false;
    s.seen_in = pass;

    double value = p->value;
    std::optional<double> shown;
    bool refresh = false;
    if (counter_rule) {
      // A count of events since the agent started that appears with N counted them all: the
      // series was 0 before (else the first Xid of a GPU would never show as an increase).
      if (s.history.empty() && info->from_zero) s.history.push(now, 0.0);
      s.history.push(now, p->value);
      s.history.prune(now - r.window_ns);
      if (!s.history.has_two()) continue;  // one sample has no increase yet
      const double increase = s.history.increase();
      if (r.kind == RuleKind::kIncrease) {
        value = increase;
        // One alert while it lasts, counting every occurrence: the window's increase when it
        // starts, then each new occurrence, so thousands of lines give one alert with the count.
        const double step_increase = s.history.last_increase();
        if (s.state == AlertState::kFiring) {
          if (step_increase > 0) {
            s.occurrences += step_increase;
            refresh = true;
          }
        } else {
          s.occurrences = increase;
        }
        shown = s.occurrences;
      } else {
        // Divided by the whole window, not the span seen so far: a young series then reads low
        // rather than extrapolating one early increment into a false alarm.
        value = increase * static_cast<double>(r.per_ns) / static_cast<double>(r.window_ns);
      }
    }
    std::optional<double> threshold;
    if (r.expected_gpus) {
      threshold = static_cast<double>(*r.expected_gpus);
    } else if (r.threshold) {
      threshold = r.threshold;
    } else if (auto t = index.value(r.threshold_metric, key)) {
      threshold = *t + r.threshold_offset;
    } else {
      continue;  // no limit for this series in this sample (e.g. slowdown temp not reported)
    }
    Observation o;
    o.value = value;
    o.shown = shown;
    o.refresh = refresh;
    o.threshold = threshold;
    const Op op = r.expected_gpus ? Op::kLt : r.op;
    o.condition = compare(op, value, *threshold);
    o.holds_firing = r.clear ? compare(op, value, *r.clear) : o.condition;
    if (!r.when_metric.empty()) {
      const auto w = index.value(r.when_metric, key);
      const bool guard = w && compare(r.when_op, *w, r.when_threshold);
      o.condition = o.condition && guard;
      o.holds_firing = o.holds_firing && guard;
    }
    step(r, s, o, r.for_ns, now, out);
  }
  // Series that stopped reporting: keep their state through short gaps, drop them after that.
  // An adopted alert whose series is missing at once is not given the gap: its evidence is
  // from before the restart, and the GPU or counter it named may be gone for good. Nor is one
  // whose GPU reports under another UUID label: a GPU lost since the agent started has no UUID
  // until it answers again, and then its recovered series must end the alert, not a new one.
  const auto unseen = [&](const Series& s) { return s.seen_in != pass; };
  std::set<std::string> seen_identities;
  if (std::any_of(st.series.begin(), st.series.end(),
                  [&](const auto& e) { return unseen(e.second); })) {
    for (const auto& [key, s] : st.series) {
      if (!unseen(s)) seen_identities.insert(identity_key(s.labels));
    }
  }
  for (auto it = st.series.begin(); it != st.series.end();) {
    Series& s = it->second;
    const bool superseded =
        unseen(s) && !s.labels.empty() && seen_identities.count(identity_key(s.labels)) > 0;
    if (unseen(s) && (s.adopted || superseded || now - s.last_seen > kStaleAfter)) {
      step(r, s, std::nullopt, r.for_ns, now, out);
      it = st.series.erase(it);
    } else {
      ++it;
    }
  }
  return {};
}

void RuleEngine::step(const Rule& rule, Series& s, const std::optional<Observation>& obs,
                      DurationNs hold, TimeNs now, std::vector<Transition>& out) {
  if (obs) {
    s.last_value = obs->shown.value_or(obs->value);
    s.last_threshold = obs->threshold;
  }
  auto emit = [&](AlertState to) {
    Transition t;
    t.rule = rule.name;
    t.labels = s.labels;
    for (const auto& [k, v] : rule.labels) t.labels.emplace(k, v);  // series labels win
    t.from = s.state;
    t.to = to;
    t.value = s.last_value;
    t.at = now;
    t.severity = rule.severity;
    t.description = render_description(rule, t.labels, s.last_value, s.last_threshold);
    if (to == AlertState::kPending) {
      // Descriptions are written for a firing alert ("… for 5 minutes"): a pending one must
      // not read as if it had already held that long.
      t.description = fmt::format("pending, fires if it still holds after {}: {}",
                                  duration_text(rule.for_ns), t.description);
    }
    out.push_back(std::move(t));
    s.state = to;
  };
  if (!obs) {  // stale series
    if (s.state == AlertState::kPending) emit(AlertState::kInactive);
    if (s.state == AlertState::kFiring) emit(AlertState::kResolved);
    return;
  }
  switch (s.state) {
    case AlertState::kInactive:
    case AlertState::kResolved:
      if (!obs->condition) break;
      s.pending_since = now;
      emit(hold <= 0 ? AlertState::kFiring : AlertState::kPending);
      break;
    case AlertState::kPending:
      if (!obs->condition) {
        emit(AlertState::kInactive);
      } else if (now - s.pending_since >= hold) {
        emit(AlertState::kFiring);
      }
      break;
    case AlertState::kFiring:
      if (!obs->holds_firing) {
        emit(AlertState::kResolved);
      } else if (obs->refresh) {
        emit(AlertState::kFiring);  // same alert, new count: stored, not notified again
      }
      break;
  }
}

}  // namespace cardiac::rules
