// SPDX-License-Identifier: Apache-2.0
// `cardiac sim --config FILE`: the TOML form of the flags, plus the policies' parameters in a
// [policy] table. Errors name FILE:LINE:COLUMN and the key.
#include <toml++/toml.h>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/sim_setup.h"
#include "config/toml_reader.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::cli {
namespace {

// The [policy] table through the configuration's own typed reader (file:line:column errors).
Status apply_policy_table(const std::string& path, const toml::table& t, PolicyTuning& p) {
  config::TableReader r(t, "policy", path);
  CARDIAC_TRY(r.only({"half_life", "max_age", "backfill_interval", "priority_calc_period",
                      "fair_tree", "favor_small", "spread", "dampening", "weights"}));
  auto duration = [&](const char* key, std::optional<DurationNs>& dst) -> Status {
    DurationNs v = 0;
    CARDIAC_TRY(r.get_duration(key, v));
    if (t.contains(key) && !dst) dst = v;
    return {};
  };
  auto boolean = [&](const char* key, std::optional<bool>& dst) -> Status {
    bool v = false;
    CARDIAC_TRY(r.get(key, v));
    if (t.contains(key) && !dst) dst = v;
    return {};
  };
  auto number = [&](const config::TableReader& from, const toml::table& in, const char* key,
                    std::optional<double>& dst, double min) -> Status {
    double v = 0;
    CARDIAC_TRY(from.get_number(key, v, min));
    if (in.contains(key) && !dst) dst = v;
    return {};
  };
  CARDIAC_TRY(duration("half_life", p.half_life));
  CARDIAC_TRY(duration("max_age", p.max_age));
  // 0 is allowed for these (backfill, or recompute priorities, on every pass), which a positive
  // duration reader refuses.
  auto period = [&](const char* key, std::optional<DurationNs>& dst) -> Status {
    const toml::node* n = t.get(key);
    if (n == nullptr) return {};
    auto ns = n->is_string() ? parse_duration_ns(*n->value<std::string>()) : std::nullopt;
    if (!ns || *ns < 0) {
      return fail(Error::parse(fmt::format("policy.{} must be a duration like \"30s\"", key),
                               r.where(n->source())));
    }
    if (!dst) dst = ns;
    return {};
  };
  CARDIAC_TRY(period("backfill_interval", p.backfill_interval));
  CARDIAC_TRY(period("priority_calc_period", p.priority_calc_period));
  CARDIAC_TRY(boolean("fair_tree", p.fair_tree));
  CARDIAC_TRY(boolean("favor_small", p.favor_small));
  CARDIAC_TRY(boolean("spread", p.spread));
  CARDIAC_TRY(number(r, t, "dampening", p.dampening, 1));
  if (const toml::node* n = t.get("weights")) {
    const toml::table* w = n->as_table();
    if (!w) return fail(Error::parse("policy.weights must be a table", r.where(n->source())));
    config::TableReader wr(*w, "policy.weights", path);
    CARDIAC_TRY(wr.only({"age", "fairshare", "job_size", "qos"}));
    CARDIAC_TRY(number(wr, *w, "age", p.w_age, 0));
    CARDIAC_TRY(number(wr, *w, "fairshare", p.w_fairshare, 0));
    CARDIAC_TRY(number(wr, *w, "job_size", p.w_job_size, 0));
    CARDIAC_TRY(number(wr, *w, "qos", p.w_qos, 0));
  }
  return {};
}

// The [fail_slow] table: rate (a number or "typical"), factor, detection (a duration or
// several, a sweep) and repair. Flags given win.
Status apply_fail_slow_table(const std::string& path, const toml::table& t, SimFlags& f) {
  config::TableReader r(t, "fail_slow", path);
  CARDIAC_TRY(r.only({"rate", "factor", "detection", "repair"}));
  auto bad = [&](const toml::node& n, std::string_view what) {
    return fail(Error::parse(fmt::format("fail_slow.{}", what), r.where(n.source())));
  };
  if (const toml::node* n = t.get("rate")) {
    std::string text;
    if (n->is_number()) {
      text = fmt::format("{}", *n->value<double>());
    } else if (n->is_string() && *n->value<std::string>() == "typical") {
      text = "typical";
    } else {
      return bad(*n, "rate must be stragglers per GPU-day (e.g. 1e-4) or \"typical\"");
    }
    if (f.fail_slow.empty()) f.fail_slow = text;
  }
  if (const toml::node* n = t.get("factor")) {
    if (!n->is_number()) return bad(*n, "factor must be a number (e.g. 1.5)");
    if (!f.fail_slow_factor) f.fail_slow_factor = n->value<double>();
  }
  if (const toml::node* n = t.get("detection")) {
    std::vector<std::string> v;
    if (n->is_string()) v.push_back(*n->value<std::string>());
    if (const toml::array* a = n->as_array()) {
      for (const auto& e : *a) {
        if (!e.is_string()) return bad(*n, "detection must be a duration or durations");
        v.push_back(*e.value<std::string>());
      }
    }
    if (v.empty()) return bad(*n, "detection must be a duration (\"30m\") or durations");
    if (f.fail_slow_detection.empty()) f.fail_slow_detection = std::move(v);
  }
  if (const toml::node* n = t.get("repair")) {
    if (!n->is_string()) return bad(*n, "repair must be a duration like \"24h\"");
    if (f.fail_slow_repair.empty()) f.fail_slow_repair = *n->value<std::string>();
  }
  return {};
}

}  // namespace

// The file's keys fill only what the flags left unset.
Status apply_sim_file(const std::string& path, SimFlags& f) {
  std::ifstream in(path);
  if (!in) return fail(Error::io(path, errno));
  std::stringstream ss;
  ss << in.rdbuf();
  toml::table root;
  try {
    root = toml::parse(ss.str(), path);
  } catch (const toml::parse_error& e) {
    return fail(Error::parse(
        std::string(e.description()),
        fmt::format("{}:{}:{}", path, e.source().begin.line, e.source().begin.column)));
  }
  static const std::set<std::string> kKnown = {
      "trace",   "format",           "synth",    "jobs",       "load",  "nodes_file",
      "cluster", "policies",         "failures", "checkpoint", "seeds", "days",
      "threads", "nodes_per_domain", "policy",   "fail_slow"};
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    auto where =
        fmt::format("{}:{}:{}", path, node.source().begin.line, node.source().begin.column);
    if (!kKnown.contains(k)) {
      return fail(Error::parse(fmt::format("unknown key '{}'", k), where));
    }
    auto want_string = [&](std::string& dst) -> Status {
      if (!node.is_string())
        return fail(Error::parse(fmt::format("'{}' must be a string", k), where));
      if (dst.empty() || dst == "auto") dst = *node.value<std::string>();
      return {};
    };
    // A string or an array of strings; flags given on the command line win.
    auto strings = [&](std::vector<std::string>& dst) -> Status {
      std::vector<std::string> v;
      if (node.is_string()) {
        v.push_back(*node.value<std::string>());
      } else if (const toml::array* a = node.as_array()) {
        for (const auto& e : *a) {
          if (!e.is_string()) {
            return fail(Error::parse(fmt::format("'{}' must be a string or strings", k), where));
          }
          v.push_back(*e.value<std::string>());
        }
      } else {
        return fail(Error::parse(fmt::format("'{}' must be a string or strings", k), where));
      }
      if (dst.empty()) dst = std::move(v);
      return {};
    };
    if (k == "fail_slow") {
      const toml::table* t = node.as_table();
      if (!t) return fail(Error::parse("'fail_slow' must be a table", where));
      CARDIAC_TRY(apply_fail_slow_table(path, *t, f));
    } else if (k == "policy") {
      const toml::table* t = node.as_table();
      if (!t) return fail(Error::parse("'policy' must be a table", where));
      CARDIAC_TRY(apply_policy_table(path, *t, f.tuning));
    } else if (k == "policies") {
      std::vector<std::string> v;
      CARDIAC_TRY(strings(v));
      if (f.policy.empty()) {
        for (const auto& p : v) f.policy += (f.policy.empty() ? "" : ",") + p;
      }
    } else if (k == "failures") {
      CARDIAC_TRY(strings(f.failures));
    } else if (k == "checkpoint") {
      CARDIAC_TRY(strings(f.checkpoint));
    } else if (k == "seeds") {
      std::vector<std::uint64_t> v;
      const toml::array* a = node.as_array();
      if (node.is_integer()) v.push_back(static_cast<std::uint64_t>(*node.value<std::int64_t>()));
      for (std::size_t i = 0; a && i < a->size(); ++i) {
        if (!(*a)[i].is_integer() || *(*a)[i].value<std::int64_t>() < 0) {
          return fail(Error::parse("'seeds' must be non-negative integers", where));
        }
        v.push_back(static_cast<std::uint64_t>(*(*a)[i].value<std::int64_t>()));
      }
      if (v.empty()) return fail(Error::parse("'seeds' must be non-negative integers", where));
      if (f.seeds.empty()) f.seeds = std::move(v);
    } else if (k == "jobs" || k == "threads" || k == "nodes_per_domain") {
      if (!node.is_integer() || *node.value<std::int64_t>() < 0) {
        return fail(Error::parse(fmt::format("'{}' must be a non-negative integer", k), where));
      }
      const auto v = *node.value<std::int64_t>();
      if (k == "jobs" && !f.jobs) f.jobs = static_cast<double>(v);
      if (k == "threads" && f.threads == 0) f.threads = static_cast<unsigned>(v);
      if (k == "nodes_per_domain" && f.nodes_per_domain == 0) {
        f.nodes_per_domain = static_cast<unsigned>(v);
      }
    } else if (k == "load" || k == "days") {
      if (!node.is_number())
        return fail(Error::parse(fmt::format("'{}' must be a number", k), where));
      const double v = *node.value<double>();
      if (k == "load" && !f.load) f.load = v;
      if (k == "days" && f.days == 0) f.days = v;
    } else {
      std::string* dst = k == "trace"        ? &f.trace
                         : k == "format"     ? &f.format
                         : k == "synth"      ? &f.synth
                         : k == "nodes_file" ? &f.nodes_file
                                             : &f.cluster;
      CARDIAC_TRY(want_string(*dst));
    }
  }
  return {};
}

}  // namespace cardiac::cli
