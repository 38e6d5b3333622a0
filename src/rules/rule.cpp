// SPDX-License-Identifier: Apache-2.0
// Names, comparison and description rendering for alert rules.
#include "rules/rule.h"

#include <cmath>

#include "core/format.h"

namespace cardiac::rules {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
  }
  return "?";
}

std::optional<Op> parse_op(std::string_view s) {
  for (Op op : {Op::kGt, Op::kGe, Op::kLt, Op::kLe, Op::kEq, Op::kNe}) {
    if (op_name(op) == s) return op;
  }
  return std::nullopt;
}

std::string_view kind_name(RuleKind k) {
  switch (k) {
    case RuleKind::kThreshold:
      return "threshold";
    case RuleKind::kRate:
      return "rate";
    case RuleKind::kAbsence:
      return "absence";
    case RuleKind::kIncrease:
      return "increase";
  }
  return "?";
}

bool compare(Op op, double value, double threshold) {
  switch (op) {
    case Op::kGt:
      return value > threshold;
    case Op::kGe:
      return value >= threshold;
    case Op::kLt:
      return value < threshold;
    case Op::kLe:
      return value <= threshold;
    case Op::kEq:
      return value == threshold;
    case Op::kNe:
      return value != threshold;
  }
  return false;
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(v));
  std::string s = fmt::format("{:.2f}", v);
  // "8.50" → "8.5": trailing zeros add nothing for a reader.
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string render_description(const Rule& rule, const Labels& labels, double value,
                               std::optional<double> threshold) {
  const std::string& d = rule.description;
  std::string out;
  out.reserve(d.size() + 16);
  std::size_t i = 0;
  while (i < d.size()) {
    const std::size_t open = d.find('{', i);
    if (open == std::string::npos) break;
    const std::size_t close = d.find('}', open + 1);
    if (close == std::string::npos) break;
    out.append(d, i, open - i);
    const std::string key = d.substr(open + 1, close - open - 1);
    std::optional<std::string> repl;
    if (key == "value") {
      repl = format_number(value);
    } else if (key == "threshold") {
      repl = threshold ? format_number(*threshold) : std::string("?");
    } else if (key == "metric") {
      repl = rule.metric;
    } else if (key == "rule") {
      repl = rule.name;
    } else if (auto it = labels.find(key); it != labels.end()) {
      repl = it->second;  // {gpu}, {uuid}, {mount}, {nic}
    } else if (auto rt = rule.labels.find(key); rt != rule.labels.end()) {
      repl = rt->second;
    }
    // A lost GPU answers nothing, not even its UUID: say so rather than print "{uuid}".
    if (!repl && key == "uuid") repl = "uuid unknown";
    out += repl ? *repl : d.substr(open, close - open + 1);
    i = close + 1;
  }
  out.append(d, i, std::string::npos);
  return out;
}

}  // namespace cardiac::rules
