// SPDX-License-Identifier: Apache-2.0
// `cardiac sim --config FILE`: the TOML form of the flags, plus the policies' parameters in a
// [policy] table. Errors name FILE:LINE:COLUMN and the key.
#include <toml++/toml.h>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/sim_setup.h"
#include "core/format.h"
#include "core/strings.h"

namespace cardiac::cli {
namespace {

std::string where_of(const std::string& path, const toml::node& n) {
  return fmt::format("{}:{}:{}", path, n.source().begin.line, n.source().begin.column);
}

Status apply_policy_table(const std::string& path, const toml::table& t, PolicyTuning& p) {
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    const std::string where = where_of(path, node);
    auto duration = [&](std::optional<DurationNs>& dst) -> Status {
      auto ns = node.is_string() ? parse_duration_ns(*node.value<std::string>()) : std::nullopt;
      if (!ns || *ns < 0) {
        return fail(
            Error::parse(fmt::format("policy.{} must be a duration like \"7d\"", k), where));
      }
      if (!dst) dst = *ns;
      return {};
    };
    auto boolean = [&](std::optional<bool>& dst) -> Status {
      if (!node.is_boolean()) {
        return fail(Error::parse(fmt::format("policy.{} must be true or false", k), where));
      }
      if (!dst) dst = *node.value<bool>();
      return {};
    };
    auto number = [&](std::optional<double>& dst, double min) -> Status {
      if (!node.is_number() || *node.value<double>() < min) {
        return fail(
            Error::parse(fmt::format("policy.{} must be a number of at least {}", k, min), where));
      }
      if (!dst) dst = *node.value<double>();
      return {};
    };
    if (k == "half_life") {
      CARDIAC_TRY(duration(p.half_life));
    } else if (k == "max_age") {
      CARDIAC_TRY(duration(p.max_age));
    } else if (k == "backfill_interval") {
      CARDIAC_TRY(duration(p.backfill_interval));
    } else if (k == "fair_tree") {
      CARDIAC_TRY(boolean(p.fair_tree));
    } else if (k == "favor_small") {
      CARDIAC_TRY(boolean(p.favor_small));
    } else if (k == "spread") {
      CARDIAC_TRY(boolean(p.spread));
    } else if (k == "dampening") {
      CARDIAC_TRY(number(p.dampening, 1));
    } else if (k == "weights") {
      const toml::table* w = node.as_table();
      if (!w) return fail(Error::parse("policy.weights must be a table", where));
      for (const auto& [wkey, wnode] : *w) {
        const std::string wk(wkey.str());
        std::optional<double>* dst = wk == "age"         ? &p.w_age
                                     : wk == "fairshare" ? &p.w_fairshare
                                     : wk == "job_size"  ? &p.w_job_size
                                     : wk == "qos"       ? &p.w_qos
                                                         : nullptr;
        if (!dst) {
          return fail(Error::parse(
              fmt::format("unknown key 'policy.weights.{}' (age, fairshare, job_size, qos)", wk),
              where_of(path, wnode)));
        }
        if (!wnode.is_number() || *wnode.value<double>() < 0) {
          return fail(Error::parse(fmt::format("policy.weights.{} must be a number >= 0", wk),
                                   where_of(path, wnode)));
        }
        if (!*dst) *dst = *wnode.value<double>();
      }
    } else {
      return fail(Error::parse(
          fmt::format("unknown key 'policy.{}' (half_life, max_age, backfill_interval, fair_tree, "
                      "favor_small, spread, dampening, weights)",
                      k),
          where));
    }
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
      "threads", "nodes_per_domain", "policy"};
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
    if (k == "policy") {
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
      if (k == "jobs" && f.jobs == 0) f.jobs = static_cast<std::size_t>(v);
      if (k == "threads" && f.threads == 0) f.threads = static_cast<unsigned>(v);
      if (k == "nodes_per_domain" && f.nodes_per_domain == 0) {
        f.nodes_per_domain = static_cast<unsigned>(v);
      }
    } else if (k == "load" || k == "days") {
      if (!node.is_number())
        return fail(Error::parse(fmt::format("'{}' must be a number", k), where));
      const double v = *node.value<double>();
      if (k == "load" && f.load == 0) f.load = v;
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
