// SPDX-License-Identifier: Apache-2.0
// Policy names: parsing "backfill:priority" and writing it back.
#include <array>
#include <string>

#include "core/format.h"
#include "core/strings.h"
#include "sched/sched.h"

namespace cardiac::sched {
namespace {

constexpr std::array<std::string_view, 5> kOrders = {"fcfs", "priority", "fairshare", "sjf", "las"};

bool is_order(std::string_view s) {
  for (std::string_view o : kOrders) {
    if (o == s) return true;
  }
  return false;
}

}  // namespace

Result<PolicyConfig> parse_policy(std::string_view text) {
  const std::string lower = to_lower(trim(text));
  const std::string_view s = lower;
  PolicyConfig p;
  const auto colon = s.find(':');
  const std::string_view name = trim(s.substr(0, colon));
  const std::string_view base = colon == std::string_view::npos ? "" : trim(s.substr(colon + 1));
  auto bad = [&](std::string why) {
    return fail(
        Error::invalid(fmt::format("{} (expected fcfs, priority, fairshare, sjf, las, backfill or "
                                   "backfill:<fcfs|priority|fairshare|sjf|las>)",
                                   why),
                       fmt::format("scheduling policy \"{}\"", text)));
  };
  if (name == "backfill") {
    if (colon != std::string_view::npos && !is_order(base)) {
      return bad(fmt::format("backfill cannot keep the order \"{}\"", base));
    }
    p.name = "backfill";
    p.base = base.empty() ? "fcfs" : std::string(base);
    return p;
  }
  if (!is_order(name)) return bad(name.empty() ? "no policy named" : "unknown policy");
  if (colon != std::string_view::npos) {
    return bad(fmt::format("only backfill takes an order after ':'"));
  }
  p.name = std::string(name);
  p.base = p.name;
  return p;
}

std::string policy_text(const PolicyConfig& policy) {
  if (policy.name == "backfill") return fmt::format("backfill:{}", policy.base);
  return policy.name;
}

}  // namespace cardiac::sched
