// SPDX-License-Identifier: Apache-2.0
// The differences between a baseline and this host, each with its risk.
#include <algorithm>
#include <set>
#include <string>

#include "baseline/baseline.h"
#include "baseline/capture_util.h"
#include "core/format.h"

namespace cardiac::baseline {
namespace {

Difference difference(const std::string& key, const Fact* expected, const Fact* here) {
  FactInfo info = fact_info(key);
  Difference d;
  d.key = key;
  d.label = info.label;
  d.gpu = info.gpu;
  // The baseline's own family, severity and risk win: an operator may have tuned them.
  const Fact* f = expected != nullptr ? expected : here;
  d.family = f->family.empty() ? info.family : f->family;
  d.severity = f->severity;
  d.risk = f->risk.empty() ? info.risk : f->risk;
  if (expected != nullptr) d.expected = expected->value;
  if (here != nullptr) {
    d.here = here->value;
    d.unreadable = !here->value.has_value();
    d.source = here->source;
  }
  return d;
}

// Whether the baseline has any fact of GPU `index` ("gpu.3.name", …).
bool has_gpu(const Baseline& b, unsigned index) {
  const std::string prefix = fmt::format("gpu.{}.", index);
  return std::any_of(b.facts.begin(), b.facts.end(),
                     [&](const Fact& f) { return f.key.starts_with(prefix); });
}

}  // namespace

std::string Difference::sentence() const {
  if (unreadable) {
    return fmt::format("could not read the {} here ({}); the baseline has {}", label, source,
                       expected.value_or("?"));
  }
  if (!expected) {
    return fmt::format("{} {} here, not in the baseline: {}", label, here.value_or("?"), risk);
  }
  if (!here) {
    return fmt::format("{} not present here, {} in the baseline: {}", label, *expected, risk);
  }
  return fmt::format("{} {} here, {} in the baseline: {}", label, *here, *expected, risk);
}

std::vector<Difference> compare(const Baseline& expected, const Baseline& here) {
  std::set<std::string,
           decltype([](const std::string& a, const std::string& b) { return key_less(a, b); })>
      keys;
  for (const auto& f : expected.facts) keys.insert(f.key);
  for (const auto& f : here.facts) keys.insert(f.key);
  std::vector<Difference> out;
  for (const auto& key : keys) {
    const Fact* e = expected.find(key);
    const Fact* h = here.find(key);
    // What the baseline could not read cannot be compared; `baseline show` says so.
    if (e != nullptr && !e->value) continue;
    // A fact only one side has: a GPU more or less is already the count's difference.
    if (e == nullptr && h != nullptr && !h->value) continue;
    if (e != nullptr && h != nullptr && e->value == h->value) continue;
    // capture() writes every per-GPU fact for each GPU it lists, so one the baseline lacks for
    // a GPU it has was not read by the cardiac that took it (application clocks before they
    // were read): nothing to compare against.
    const auto gpu = fact_info(key).gpu;
    if (e == nullptr && gpu && has_gpu(expected, *gpu)) continue;
    if ((e == nullptr || h == nullptr) && gpu && expected.find("gpu.count") &&
        here.find("gpu.count") &&
        expected.find("gpu.count")->value != here.find("gpu.count")->value) {
      continue;
    }
    out.push_back(difference(key, e, h));
  }
  return out;
}

}  // namespace cardiac::baseline
