// SPDX-License-Identifier: Apache-2.0
#include "slurm/plan.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/format.h"
#include "core/time.h"
#include "slurm/reason.h"

namespace cardiac::slurm {

std::size_t drain_allowance(const DrainLimit& limit, std::size_t fleet) {
  // floor: 10 % of 15 nodes allows 1, not 2; the minimum keeps a small cluster able to drain.
  auto share = static_cast<std::size_t>(
      std::floor(static_cast<double>(fleet) * limit.percent / 100.0 + 1e-9));
  std::size_t n = std::max<std::size_t>(share, limit.min_nodes);
  if (limit.max_nodes > 0) n = std::min<std::size_t>(n, limit.max_nodes);
  return n;
}

std::vector<std::string> recent_drains(const std::vector<NodeInfo>& nodes, const std::string& self,
                                       const DrainLimit& limit, TimeNs now) {
  std::vector<std::string> out;
  for (const auto& n : nodes) {
    if (n.name == self || !is_cardiac_reason(n.reason)) continue;
    if (n.reason_time == 0 || n.reason_time >= now - limit.window) out.push_back(n.name);
  }
  return out;
}

bool drain_overdrawn(const std::vector<NodeInfo>& nodes, const std::string& self,
                     const DrainLimit& limit, TimeNs now) {
  std::vector<const NodeInfo*> drained;
  for (const auto& n : nodes) {
    if (!is_cardiac_reason(n.reason)) continue;
    if (n.name == self || n.reason_time == 0 || n.reason_time >= now - limit.window) {
      drained.push_back(&n);
    }
  }
  std::sort(drained.begin(), drained.end(), [](const NodeInfo* a, const NodeInfo* b) {
    return std::tie(a->reason_time, a->name) < std::tie(b->reason_time, b->name);
  });
  const std::size_t allowance = drain_allowance(limit, nodes.size());
  for (std::size_t i = 0; i < drained.size(); ++i) {
    if (drained[i]->name == self) return i >= allowance;
  }
  return false;
}

Plan plan_drain(const std::string& problem, const NodeInfo& self,
                const std::vector<NodeInfo>& nodes, const DrainLimit& limit, TimeNs now) {
  Plan p;
  p.reason = make_reason(problem);
  if (self.drain) {
    p.why = is_cardiac_reason(self.reason)
                ? fmt::format("{} is already drained by cardiac: {}", self.name, self.reason)
                : fmt::format("{} is already drained by someone else ({}); left as it is",
                              self.name, self.reason.empty() ? "no reason" : self.reason);
    return p;
  }
  p.recent_nodes = recent_drains(nodes, self.name, limit, now);
  p.recent = p.recent_nodes.size();
  p.allowance = drain_allowance(limit, nodes.size());
  if (p.recent + 1 > p.allowance) {
    p.action = Action::kHold;
    p.why = fmt::format(
        "drain of {} held: cardiac drained {} of {} nodes within {} ({}), the limit allows {}",
        self.name, p.recent, nodes.size(), format_duration(limit.window),
        fmt::join(p.recent_nodes, ","), p.allowance);
    return p;
  }
  p.action = Action::kDrain;
  p.why = fmt::format("draining {}: {}", self.name, p.reason);
  return p;
}

Plan plan_healthcheck(const std::vector<std::string>& critical, const NodeInfo& self,
                      const std::vector<NodeInfo>& nodes, const DrainLimit& limit, TimeNs now) {
  if (!critical.empty()) {
    std::string problem = critical.front();
    if (critical.size() > 1) {
      problem += fmt::format("; {} more critical problem{}", critical.size() - 1,
                             critical.size() == 2 ? "" : "s");
    }
    return plan_drain(problem, self, nodes, limit, now);
  }
  Plan p;
  if (self.drain && is_cardiac_reason(self.reason)) {
    p.action = Action::kResume;
    p.why = fmt::format("{} is healthy again: resuming (was: {})", self.name, self.reason);
  } else if (self.drain) {
    p.why = fmt::format("{} is healthy; drained by someone else ({}), left drained", self.name,
                        self.reason.empty() ? "no reason" : self.reason);
  } else {
    p.why = fmt::format("{} is healthy", self.name);
  }
  return p;
}

std::string_view action_name(Action a) {
  switch (a) {
    case Action::kNone:
      return "none";
    case Action::kDrain:
      return "drain";
    case Action::kResume:
      return "resume";
    case Action::kHold:
      return "hold";
  }
  return "none";
}

}  // namespace cardiac::slurm
