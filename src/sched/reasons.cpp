// SPDX-License-Identifier: Apache-2.0
// The waiting reasons: the "needs N free GPUs" shortfall (what the job asks against what the
// cluster has free now) and the words of every kind, formatted when a job's reason is asked for.
#include "sched/reasons.h"

#include <algorithm>

#include "core/format.h"
#include "core/time.h"
#include "core/units.h"

namespace cardiac::sched::detail {
namespace {

std::string index_list(const std::vector<unsigned>& v) {
  return fmt::format("GPU{} {}", v.size() == 1 ? "" : "s", fmt::join(v, ", "));
}

}  // namespace

std::string gpus_text(unsigned long long n) {
  return fmt::format("{} GPU{}", n, n == 1 ? "" : "s");
}

std::string models_text(const std::vector<std::string>& models) {
  if (models.empty()) return {};
  if (models.size() == 1) return " of model " + models[0];
  return fmt::format(" of model {} or {}", fmt::join(models.begin(), models.end() - 1, ", "),
                     models.back());
}

std::string when_text(TimeNs t, TimeNs now) {
  if (t <= now) return fmt::format("{} (now)", format_iso8601(t));
  return fmt::format("{} (in {})", format_iso8601(t), format_duration(t - now));
}

Explainer::Explainer(const Cluster& cluster, const ClusterState& state)
    : cluster_(cluster), state_(state) {
  // On one machine the indices help (they are what nvidia-smi shows); on a cluster, counts.
  std::vector<unsigned> fenced;
  std::vector<unsigned> busy;
  for (const Node& n : cluster.nodes) {
    for (const Gpu& g : n.gpus) {
      if (g.health == GpuHealth::kFenced) {
        fenced.push_back(g.index);
      } else if (g.busy_outside) {
        busy.push_back(g.index);
      }
    }
  }
  std::vector<std::string> parts;
  if (cluster.nodes.size() == 1) {
    if (!fenced.empty()) parts.push_back(index_list(fenced) + " fenced");
    if (!busy.empty()) parts.push_back(index_list(busy) + " busy outside the queue");
  } else {
    if (!fenced.empty()) parts.push_back(gpus_text(fenced.size()) + " fenced");
    if (!busy.empty()) parts.push_back(gpus_text(busy.size()) + " busy outside the queue");
  }
  if (!parts.empty()) unusable_ = fmt::format(" ({})", fmt::join(parts, "; "));
}

const Explainer::Counts& Explainer::counts(const Need& need) {
  const auto key = std::make_tuple(need.memory, need.shared, need.allowed);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Counts c;
  const auto& nodes = state_.nodes();
  c.per_node.reserve(nodes.size());
  const bool plain = need.memory == 0 && !need.shared && need.allowed == nullptr;
  for (unsigned n = 0; n < nodes.size(); ++n) {
    c.per_node.push_back(plain ? nodes[n].free : state_.eligible(n, need));
  }
  std::sort(c.per_node.begin(), c.per_node.end(), std::greater<>());
  c.prefix.assign(c.per_node.size() + 1, 0);
  for (std::size_t i = 0; i < c.per_node.size(); ++i) {
    c.prefix[i + 1] = c.prefix[i] + c.per_node[i];
  }
  return cache_.emplace(key, std::move(c)).first->second;
}

std::string Explainer::shortfall(const Job& job) {
  const Need need = state_.need_of(job);
  const Counts& c = counts(need);
  const std::string model = models_text(job.models);
  const char* such = job.models.empty() ? "" : " such";
  std::string what;
  if (need.shared) {
    what = need.memory > 0 ? fmt::format("{}{} with {} unused to share", gpus_text(need.gpus),
                                         model, format_bytes(need.memory))
                           : fmt::format("{}{} to share", gpus_text(need.gpus), model);
  } else {
    what = fmt::format("{} free {}{}{}", need.gpus, need.gpus == 1 ? "GPU" : "GPUs", model,
                       need.memory > 0 ? fmt::format(" with {}", format_bytes(need.memory)) : "");
  }
  const char* have = need.shared ? "usable" : "free";
  const unsigned best = c.per_node.empty() ? 0 : c.per_node.front();
  if (cluster_.nodes.size() <= 1) {
    return fmt::format("needs {}, {} {}{}", what, best, have, unusable_);
  }
  if (need.max_nodes == 1 || need.gpus <= 1) {
    return fmt::format("needs {} on one node, at most {} {} on any{} node{}", what, best, have,
                       such, unusable_);
  }
  const std::size_t k = std::min<std::size_t>(need.max_nodes, c.per_node.size());
  return fmt::format("needs {} on at most {} nodes, the {} emptiest{} nodes have {} {}{}", what,
                     need.max_nodes, k, such, c.prefix[k], have, unusable_);
}

}  // namespace cardiac::sched::detail

namespace cardiac::sched {

void Reasons::sort() const {
  if (sorted_) return;
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.id < b.id; });
  sorted_ = true;
}

const Reasons::Entry* Reasons::entry(JobId id) const {
  sort();
  auto it = std::lower_bound(entries_.begin(), entries_.end(), id,
                             [](const Entry& e, JobId v) { return e.id < v; });
  return it != entries_.end() && it->id == id ? &*it : nullptr;
}

bool Reasons::contains(JobId id) const {
  return entry(id) != nullptr;
}

std::optional<std::string> Reasons::text(JobId id) const {
  const Entry* e = entry(id);
  if (e == nullptr) return std::nullopt;
  return format(*e);
}

const Reasons::Map& Reasons::all() const {
  if (!all_) {
    sort();  // every insertion then lands at the end of the map
    Map m;
    for (const Entry& e : entries_) m.emplace_hint(m.end(), e.id, format(e));
    all_ = std::move(m);
  }
  return *all_;
}

std::string Reasons::format(const Entry& e) const {
  using detail::Wait;
  switch (e.wait) {
    case Wait::kStarted:
      break;
    case Wait::kHeld:
      return "held";
    case Wait::kDeps: {
      const auto& deps = deps_[e.arg];
      return fmt::format("waiting for job{} {}", deps.size() == 1 ? "" : "s",
                         fmt::join(deps, ", "));
    }
    case Wait::kDepsNever:
      return fmt::format("dependency never satisfied: job {} did not succeed", deps_[e.arg][0]);
    case Wait::kImpossible:
      return "cannot run on this cluster: " + texts_[e.arg];
    case Wait::kUnhealthy:
      return texts_[e.arg] +
             "; it waits for fenced GPUs to be cleared and does not hold back the jobs "
             "behind it";
    case Wait::kBehind:
      return behind_;
    case Wait::kShortfall:
      return texts_[e.arg];
    case Wait::kHead:
      return fmt::format("{}; GPUs reserved for it from {}", texts_[e.arg], from_);
    case Wait::kNoPlan:
      return texts_[e.arg] +
             "; no start can be planned: it does not fit even after every running job "
             "reaches its time limit";
    case Wait::kReserved:
      return fmt::format("reserved for job {} from {}; {}", head_, from_,
                         e.arg != 0 ? "it would not finish by then"
                                    : "a job without a time limit cannot run ahead of it");
  }
  return {};
}

}  // namespace cardiac::sched
