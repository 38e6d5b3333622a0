// SPDX-License-Identifier: Apache-2.0
// Translates cardiac rules into PromQL over the exported metric families and writes the YAML.
#include "promrules/prometheus_rules.h"

#include <charconv>
#include <cstdio>
#include <optional>
#include <string_view>

#include "health/faults.h"
#include "metrics/registry.h"

namespace cardiac::promrules {
namespace {

using metrics::Scope;
using rules::Rule;
using rules::RuleKind;

// How one rule metric (rules/sample_view.cpp) reads on /metrics.
struct Source {
  std::string_view rule_metric;
  // For a gauge: an expression in the rule's unit, usable as a comparison operand (binary
  // arithmetic binds tighter than comparisons; anything looser is parenthesized here).
  std::string gauge;
  // For a counter: the exported counters whose sum is the rule metric. They are kept apart
  // because increase() takes a range selector, not an expression.
  std::vector<std::string> counters;
  Scope scope = Scope::kGpu;  // decides the labels that one-to-one matching uses
};

std::string reason(std::string_view name) {
  return "cardiac_gpu_clock_event_reason{reason=\"" + std::string(name) + "\"}";
}

// Sum of counters as a gauge expression: the current total.
Source counter(std::string_view metric, std::vector<std::string> parts, Scope scope) {
  std::string sum;
  for (const auto& p : parts) sum += (sum.empty() ? "" : " + ") + p;
  return {metric, sum, std::move(parts), scope};
}

// DCGM's replay allowance, ceil(per-lane rate x lanes), the same table as
// rules::pcie_replays_per_lane_per_min. `== bool` turns each generation into 0/1 so that the
// sum picks the matching rate; "> 0" drops unknown generations, which the agent leaves out too.
std::string replay_limit() {
  const std::string gen = "cardiac_gpu_pcie_link_generation";
  std::string rate;
  const std::pair<int, const char*> table[] = {{1, "0.15"}, {2, "0.3"},  {3, "0.48"},
                                               {4, "0.96"}, {5, "1.92"}, {6, "3.84"}};
  for (const auto& [g, r] : table) {
    rate += (rate.empty() ? "" : " + ") + std::string(r) + " * (" + gen + " == bool " +
            std::to_string(g) + ")";
  }
  return "(ceil(cardiac_gpu_pcie_link_width * (" + rate + ")) > 0)";
}

// The table; a rule metric missing here has no exported counterpart.
const std::vector<Source>& sources() {
  static const std::vector<Source> kSources = [] {
    const std::string swap_used = "(cardiac_host_swap_total_bytes - cardiac_host_swap_free_bytes)";
    // max(rx, tx) as agent computes it: "(a >= b) or b" is a where a wins, else b.
    const std::string rx =
        "100 * rate(cardiac_host_network_receive_bytes_total[1m]) / "
        "(cardiac_host_network_speed_bytes > 0)";
    const std::string tx =
        "100 * rate(cardiac_host_network_transmit_bytes_total[1m]) / "
        "(cardiac_host_network_speed_bytes > 0)";
    std::vector<Source> s = {
        {"gpu_up", "cardiac_gpu_up", {}, Scope::kGpu},
        // NVML's GPU count; an unusable NVML has no GPU series, so it reads 0 through
        // cardiac_nvml_available as sample_view does.
        {"gpu_count",
         "(count by (hostname) (cardiac_gpu_up) or on(hostname) 0 * cardiac_nvml_available)",
         {},
         Scope::kReport},
        {"nvml_available", "cardiac_nvml_available", {}, Scope::kReport},
        {"kmsg_up", "cardiac_kmsg_up", {}, Scope::kReport},
        {"gpu_temperature", "cardiac_gpu_temperature_celsius", {}, Scope::kGpu},
        {"gpu_temperature_slowdown", "cardiac_gpu_slowdown_temperature_celsius", {}, Scope::kGpu},
        {"gpu_temperature_shutdown", "cardiac_gpu_shutdown_temperature_celsius", {}, Scope::kGpu},
        {"gpu_utilization_gpu", "100 * cardiac_gpu_utilization_ratio", {}, Scope::kGpu},
        {"gpu_utilization_memory", "100 * cardiac_gpu_memory_utilization_ratio", {}, Scope::kGpu},
        {"gpu_memory_used_bytes", "cardiac_gpu_memory_used_bytes", {}, Scope::kGpu},
        {"gpu_memory_used_pct",
         "100 * cardiac_gpu_memory_used_bytes / (cardiac_gpu_memory_total_bytes > 0)",
         {},
         Scope::kGpu},
        {"gpu_power_usage_w", "cardiac_gpu_power_watts", {}, Scope::kGpu},
        {"gpu_clock_event_hw_slowdown", reason("hw_slowdown"), {}, Scope::kGpu},
        {"gpu_clock_event_hw_thermal", reason("hw_thermal_slowdown"), {}, Scope::kGpu},
        {"gpu_clock_event_hw_power_brake", reason("hw_power_brake_slowdown"), {}, Scope::kGpu},
        {"gpu_clock_event_sw_thermal", reason("sw_thermal_slowdown"), {}, Scope::kGpu},
        {"gpu_clock_event_sw_power_cap", reason("sw_power_cap"), {}, Scope::kGpu},
        counter("gpu_ecc_volatile_corrected", {"cardiac_gpu_ecc_volatile_corrected_errors_total"},
                Scope::kGpu),
        counter("gpu_ecc_volatile_uncorrected",
                {"cardiac_gpu_ecc_volatile_uncorrected_errors_total"}, Scope::kGpu),
        counter("gpu_ecc_aggregate_corrected", {"cardiac_gpu_ecc_aggregate_corrected_errors_total"},
                Scope::kGpu),
        counter("gpu_ecc_aggregate_uncorrected",
                {"cardiac_gpu_ecc_aggregate_uncorrected_errors_total"}, Scope::kGpu),
        counter("gpu_retired_pages_total",
                {"cardiac_gpu_retired_pages_sbe", "cardiac_gpu_retired_pages_dbe"}, Scope::kGpu),
        {"gpu_retired_pages_pending", "cardiac_gpu_retired_pages_pending", {}, Scope::kGpu},
        counter("gpu_remapped_rows_uncorrected", {"cardiac_gpu_remapped_rows_uncorrectable"},
                Scope::kGpu),
        {"gpu_remapped_rows_pending", "cardiac_gpu_remapped_rows_pending", {}, Scope::kGpu},
        {"gpu_remapped_rows_failure", "cardiac_gpu_remapped_rows_failure", {}, Scope::kGpu},
        {"gpu_pcie_gen_current", "cardiac_gpu_pcie_link_generation", {}, Scope::kGpu},
        {"gpu_pcie_gen_max", "cardiac_gpu_pcie_link_generation_max", {}, Scope::kGpu},
        {"gpu_pcie_width_current", "cardiac_gpu_pcie_link_width", {}, Scope::kGpu},
        {"gpu_pcie_width_max", "cardiac_gpu_pcie_link_width_max", {}, Scope::kGpu},
        counter("gpu_pcie_replay_counter", {"cardiac_gpu_pcie_replays_total"}, Scope::kGpu),
        {"gpu_pcie_replay_limit_per_min", replay_limit(), {}, Scope::kGpu},
        {"host_cpu_busy_pct", "100 * cardiac_host_cpu_busy_ratio", {}, Scope::kReport},
        {"host_memory_available_pct",
         "100 * cardiac_host_memory_available_bytes / (cardiac_host_memory_total_bytes > 0)",
         {},
         Scope::kReport},
        {"host_swap_used_bytes", swap_used, {}, Scope::kReport},
        {"host_swap_used_pct",
         "100 * " + swap_used + " / (cardiac_host_swap_total_bytes > 0)",
         {},
         Scope::kReport},
        // host::used_percent: used / (used + available), as df shows it.
        {"host_disk_used_pct",
         "100 * cardiac_host_filesystem_used_bytes / ((cardiac_host_filesystem_used_bytes + "
         "cardiac_host_filesystem_avail_bytes) > 0)",
         {},
         Scope::kFilesystem},
        {"host_dstate_processes", "cardiac_host_dstate_processes", {}, Scope::kReport},
        {"host_nic_util_pct", "((" + rx + ") >= (" + tx + ") or (" + tx + "))", {}, Scope::kNic},
        counter("host_nic_errors_total",
                {"cardiac_host_network_receive_errors_total",
                 "cardiac_host_network_transmit_errors_total"},
                Scope::kNic),
        counter("host_nic_drops_total",
                {"cardiac_host_network_receive_drops_total",
                 "cardiac_host_network_transmit_drops_total"},
                Scope::kNic),
        counter("gpu_xid_errors_total", {"cardiac_gpu_xid_errors_total"}, Scope::kXidCount),
    };
    // One rule counter per fault class of health's catalog, one exported family with `class`.
    for (const auto& c : health::fault_classes()) {
      s.push_back(counter(
          c.rule_metric, {"cardiac_gpu_kernel_faults_total{class=\"" + std::string(c.name) + "\"}"},
          Scope::kFaultCount));
    }
    return s;
  }();
  return kSources;
}

const Source* find_source(std::string_view metric) {
  for (const auto& s : sources()) {
    if (s.rule_metric == metric) return &s;
  }
  return nullptr;
}

std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact form
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

// "on(gpu, uuid, ...)": one-to-one matching on the scope's labels, so an extra label on one
// side (the clock event `reason`) does not break the match.
std::string on(Scope scope) {
  std::string out = "on(";
  for (auto l : metrics::native_labels(scope)) {
    if (out.size() > 3) out += ", ";
    out += l;
  }
  return out + ")";
}

bool valid_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    const bool ok =
        c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string cmp(std::string_view lhs, rules::Op op, std::string_view rhs) {
  return std::string(lhs) + " " + std::string(rules::op_name(op)) + " " + std::string(rhs);
}

// The translated alert, or the reason it cannot be.
struct Alert {
  std::string expr;
  std::string threshold_text;  // for the {threshold} placeholder
  std::vector<std::string> notes;
  std::string error;
};

Alert translate(const Rule& r) {
  Alert a;
  // An expected-GPU absence rule is "gpu_count < N", and the engine evaluates it so too.
  const std::string metric = r.expected_gpus ? "gpu_count" : r.metric;
  const Source* src = find_source(metric);
  if (!src) {
    a.error = "metric " + metric + " has no exported counterpart on /metrics";
    return a;
  }
  if (r.kind == RuleKind::kAbsence && !r.expected_gpus) {
    // Prometheus can tell that a selector matches nothing, not which of its series went away.
    if (src->gauge.find(' ') != std::string::npos || r.for_ns <= 0) {
      a.error = "absence of " + metric + " is not a single exported series";
      return a;
    }
    a.expr = "absent_over_time(" + src->gauge + "[" + prometheus_duration(r.for_ns) + "])";
    a.notes.push_back(
        "fires when no series of the metric reported for the whole window, "
        "not per series as cardiac does");
    return a;
  }

  const Scope scope = src->scope;
  if (metric == "host_nic_util_pct" || r.when_metric == "host_nic_util_pct")
    a.notes.push_back("NIC rates over 1m; cardiac uses its two latest samples");
  std::string value = src->gauge;
  if (r.kind == RuleKind::kRate || r.kind == RuleKind::kIncrease) {
    if (src->counters.empty()) {
      a.error = std::string(rules::kind_name(r.kind)) + " rule over " + metric +
                ", which is not exported as a counter";
      return a;
    }
    const std::string window = "[" + prometheus_duration(r.window_ns) + "]";
    value.clear();
    for (const auto& c : src->counters) {
      if (!value.empty()) value += " + ";
      value += "increase(";
      value += c;
      value += window;
      value += ")";
    }
    if (r.kind == RuleKind::kRate && r.per_ns != r.window_ns) {
      if (src->counters.size() > 1) value = "(" + value + ")";
      // In seconds, so "per 1m over 5m" reads "* 60 / 300".
      value += " * " + number(static_cast<double>(r.per_ns) / kNsPerSec) + " / " +
               number(static_cast<double>(r.window_ns) / kNsPerSec);
    }
    if (r.kind == RuleKind::kRate) {
      a.notes.push_back(
          "increase() extrapolates to the window edges; cardiac divides the "
          "increase seen by the whole window");
    } else {
      a.notes.push_back(
          "the value is the window's increase; cardiac's alert counts every occurrence "
          "since it started firing");
    }
  }

  std::string threshold;
  if (r.expected_gpus) {
    threshold = number(*r.expected_gpus);
    a.threshold_text = threshold;
  } else if (r.threshold) {
    threshold = number(*r.threshold);
    a.threshold_text = threshold;
  } else {
    const Source* t = find_source(r.threshold_metric);
    if (!t) {
      a.error = "threshold metric " + r.threshold_metric + " has no exported counterpart";
      return a;
    }
    threshold = on(scope) + " " + t->gauge;
    a.threshold_text = r.threshold_metric;
    if (r.threshold_offset != 0) {
      const std::string off =
          number(r.threshold_offset < 0 ? -r.threshold_offset : r.threshold_offset);
      threshold += (r.threshold_offset < 0 ? " - " : " + ") + off;
      a.threshold_text += (r.threshold_offset < 0 ? " - " : " + ") + off;
    }
  }
  const rules::Op op = r.expected_gpus ? rules::Op::kLt : r.op;

  std::string guard;
  if (!r.when_metric.empty()) {
    const Source* w = find_source(r.when_metric);
    if (!w) {
      a.error = "guard metric " + r.when_metric + " has no exported counterpart";
      return a;
    }
    guard = " and " + on(scope) + " (" + cmp(w->gauge, r.when_op, number(r.when_threshold)) + ")";
  }

  a.expr = cmp(value, op, threshold) + guard;
  if (r.clear) {
    // The ALERTS series is Prometheus' own record of this alert firing (from the previous
    // evaluation): while it exists the looser clear condition is enough to keep the alert.
    a.expr = "(" + a.expr + ") or " + on(scope) + " (" + cmp(value, op, number(*r.clear)) + guard +
             " and " + on(scope) + " ALERTS{alertname=\"" + r.name + "\", alertstate=\"firing\"})";
  }
  return a;
}

// {value}, {threshold}, {gpu}... as Prometheus template text; unknown placeholders are left as
// written, like rules::render_description does.
std::string render(const Rule& r, const Alert& a, std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find('{', i);
    const std::size_t close = open == std::string_view::npos ? open : text.find('}', open + 1);
    if (close == std::string_view::npos) break;
    out.append(text.substr(i, open - i));
    const std::string key(text.substr(open + 1, close - open - 1));
    if (key == "value") {
      out += "{{ $value | humanize }}";
    } else if (key == "threshold") {
      out += a.threshold_text;
    } else if (key == "metric") {
      out += r.metric;
    } else if (key == "rule") {
      out += r.name;
    } else if (auto it = r.labels.find(key); it != r.labels.end()) {
      out += it->second;
    } else if (key == "mount") {
      out += "{{ $labels.mountpoint }}";  // the exported label names differ from the rules'
    } else if (key == "nic") {
      out += "{{ $labels.interface }}";
    } else if (key == "uuid") {
      // A GPU lost since the agent started has no UUID label; say so, as the agent's own text
      // does, rather than "GPU 5 ()".
      out += "{{ if $labels.uuid }}{{ $labels.uuid }}{{ else }}uuid unknown{{ end }}";
    } else if (valid_name(key)) {
      out += "{{ $labels." + key + " }}";  // gpu, uuid, hostname
    } else {
      out.append(text.substr(open, close - open + 1));
    }
    i = close + 1;
  }
  out.append(text.substr(i));
  return out;
}

}  // namespace

std::string prometheus_duration(DurationNs ns) {
  if (ns % kNsPerSec != 0) return std::to_string(ns / 1'000'000) + "ms";
  const long long s = ns / kNsPerSec;
  if (s != 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s != 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::string yaml_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;  // UTF-8 passes through (YAML is Unicode); controls go as \xNN
        }
    }
  }
  return out + "\"";
}

std::string export_prometheus_rules(const std::vector<Rule>& rules,
                                    std::vector<std::string>* skipped) {
  std::string out =
      "# Generated by `cardiac export prometheus-rules` from cardiac's alert rules.\n"
      "# Expressions read the metric families cardiac's agent exports on /metrics.\n"
      "groups:\n"
      "  - name: \"cardiac\"\n"
      "    rules:\n";
  for (const Rule& r : rules) {
    Alert a = translate(r);
    if (a.error.empty() && !valid_name(r.name)) a.error = "rule name is not a valid alert name";
    for (const auto& [k, v] : r.labels) {
      if (a.error.empty() && !valid_name(k)) a.error = "label " + k + " is not a valid name";
    }
    if (!a.error.empty()) {
      if (skipped) skipped->push_back(r.name + ": " + a.error);
      continue;
    }
    out += "      - alert: " + yaml_quote(r.name) + "\n";
    out += "        expr: " + yaml_quote(a.expr) + "\n";
    if (r.kind != RuleKind::kAbsence || r.expected_gpus) {
      if (r.for_ns > 0) out += "        for: " + yaml_quote(prometheus_duration(r.for_ns)) + "\n";
    }
    out += "        labels:\n";
    out += "          severity: " + yaml_quote(rules::severity_name(r.severity)) + "\n";
    for (const auto& [k, v] : r.labels) {
      if (k != "severity") out += "          " + k + ": " + yaml_quote(v) + "\n";
    }
    out += "        annotations:\n";
    const std::string summary =
        r.name + " on {{ $labels.hostname }}" +
        (r.expected_gpus || r.metric.rfind("gpu_", 0) != 0 ? "" : " GPU {{ $labels.gpu }}");
    out += "          summary: " + yaml_quote(summary) + "\n";
    if (!r.description.empty()) {
      out += "          description: " + yaml_quote(render(r, a, r.description)) + "\n";
    }
    if (r.clear) {
      a.notes.push_back("once firing, holds while the value stays " +
                        std::string(rules::op_name(r.op)) + " " + number(*r.clear) +
                        " (hysteresis via the ALERTS series)");
    }
    std::string note;
    for (const auto& n : a.notes) note += (note.empty() ? "" : "; ") + n;
    if (!note.empty()) out += "          cardiac_note: " + yaml_quote(note) + "\n";
  }
  return out;
}

}  // namespace cardiac::promrules
