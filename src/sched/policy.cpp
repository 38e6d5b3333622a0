// SPDX-License-Identifier: Apache-2.0
// Policy names: parsing "backfill:priority" and writing it back.
#include <array>
#include <optional>
#include <string>

#include "core/format.h"
#include "core/strings.h"
#include "sched/sched.h"

namespace cardiac::sched {
namespace {

struct OrderName {
  Order order;
  std::string_view name;
};

constexpr std::array<OrderName, 5> kOrders = {{{Order::kFcfs, "fcfs"},
                                               {Order::kPriority, "priority"},
                                               {Order::kFairshare, "fairshare"},
                                               {Order::kSjf, "sjf"},
                                               {Order::kLas, "las"}}};

}  // namespace

std::string_view order_name(Order o) {
  for (const OrderName& n : kOrders) {
    if (n.order == o) return n.name;
  }
  return "fcfs";
}

std::optional<Order> parse_order(std::string_view name) {
  for (const OrderName& n : kOrders) {
    if (n.name == name) return n.order;
  }
  return std::nullopt;
}

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
    p.backfill = true;
    if (colon == std::string_view::npos) return p;
    const std::optional<Order> order = parse_order(base);
    if (!order) return bad(fmt::format("backfill cannot keep the order \"{}\"", base));
    p.order = *order;
    return p;
  }
  const std::optional<Order> order = parse_order(name);
  if (!order) return bad(name.empty() ? "no policy named" : "unknown policy");
  if (colon != std::string_view::npos) {
    return bad(fmt::format("only backfill takes an order after ':'"));
  }
  p.order = *order;
  return p;
}

std::string policy_text(const PolicyConfig& policy) {
  if (policy.backfill) return fmt::format("backfill:{}", order_name(policy.order));
  return std::string(order_name(policy.order));
}

}  // namespace cardiac::sched
