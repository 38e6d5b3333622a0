// SPDX-License-Identifier: Apache-2.0
// Job order per policy: fcfs, Slurm multifactor priority, fair share, SJF, LAS.
#include "sched/order.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "sched/fairshare.h"

namespace cardiac::sched::detail {
namespace {

struct Key {
  double key = 0;  // larger first
  TimeNs submit = 0;
  JobId id = 0;
  unsigned idx = 0;
};

double clamp01(double v) {
  return std::clamp(v, 0.0, 1.0);
}

// Fair-share factor per pending job, from a tree holding every pending and running user.
// `assoc` gets each job's node in the tree, `nodes` how many nodes the tree has.
std::vector<double> pending_fairshare(const Cluster& cluster, const std::vector<Job>& pending,
                                      const Usage& usage, const PolicyConfig& policy,
                                      std::vector<int>& assoc, std::size_t& nodes) {
  FairShareTree tree(usage);
  assoc.resize(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    assoc[i] = tree.ensure(pending[i].user, pending[i].account);
  }
  for (const Running& r : cluster.running) tree.ensure(r.user, r.account);
  tree.compute(usage, policy.dampening);
  nodes = tree.nodes().size();
  std::vector<double> f(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) f[i] = tree.factor(assoc[i], policy.fair_tree);
  return f;
}

}  // namespace

Ranking rank_jobs(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                  const PolicyConfig& policy, Order order, TimeNs now, bool breakdown) {
  Ranking out;
  const bool factors = breakdown || order == Order::kPriority || order == Order::kFairshare;
  std::vector<double> fs;
  if (factors) {
    fs = pending_fairshare(cluster, pending, usage, policy, out.association, out.associations);
    out.priorities.reserve(pending.size());
    PriorityScale scale;
    for (const Node& n : cluster.nodes) scale.total_gpus += static_cast<double>(n.gpus.size());
    for (const Job& j : pending) {
      scale.lowest = std::min(scale.lowest, j.priority);
      scale.highest = std::max(scale.highest, j.priority);
    }
    for (std::size_t i = 0; i < pending.size(); ++i) {
      out.priorities.push_back(priority_of(pending[i], fs[i], scale, policy.weights, now));
    }
  }

  std::vector<Key> keys(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Job& j = pending[i];
    const double k =
        order_key(order, j, factors ? out.priorities[i].total : 0, factors ? fs[i] : 0);
    keys[i] = Key{.key = k, .submit = j.submit_time, .id = j.id, .idx = static_cast<unsigned>(i)};
  }
  auto before = [](const Key& a, const Key& b) {
    if (a.key != b.key) return a.key > b.key;
    if (a.submit != b.submit) return a.submit < b.submit;
    if (a.id != b.id) return a.id < b.id;
    return a.idx < b.idx;
  };
  // A caller that keeps its queue in order (the simulator, in submit order for FCFS) pays a
  // linear check instead of a sort on every pass.
  out.order.reserve(keys.size());
  if (std::is_sorted(keys.begin(), keys.end(), before)) {
    for (const Key& k : keys) out.order.push_back(k.idx);
  } else if (std::any_of(keys.begin(), keys.end(),
                         [](const Key& k) { return std::isnan(k.key); })) {
    std::sort(keys.begin(), keys.end(), before);
    for (const Key& k : keys) out.order.push_back(k.idx);
  } else {
    // The same order through two unsigned words per job (the key's order-preserving bits,
    // larger first, then the submit time), id and index only on ties: a recomputation of the
    // live queue sorts all of it, and the double and three-field compares were most of that.
    struct Packed {
      std::uint64_t key;
      std::uint64_t submit;
      unsigned idx;
    };
    std::vector<Packed> packed;
    packed.reserve(keys.size());
    for (const Key& k : keys) {
      const std::uint64_t bits = std::bit_cast<std::uint64_t>(k.key == 0 ? 0.0 : k.key);
      const std::uint64_t up = (bits >> 63) != 0 ? ~bits : bits | (std::uint64_t{1} << 63);
      packed.push_back(
          Packed{.key = ~up,
                 .submit = static_cast<std::uint64_t>(k.submit) ^ (std::uint64_t{1} << 63),
                 .idx = k.idx});
    }
    std::sort(packed.begin(), packed.end(), [&](const Packed& a, const Packed& b) {
      if (a.key != b.key) return a.key < b.key;
      if (a.submit != b.submit) return a.submit < b.submit;
      const JobId ia = keys[a.idx].id;
      const JobId ib = keys[b.idx].id;
      return ia != ib ? ia < ib : a.idx < b.idx;
    });
    for (const Packed& p : packed) out.order.push_back(p.idx);
  }
  if (!breakdown) out.priorities.clear();
  return out;
}

}  // namespace cardiac::sched::detail

namespace cardiac::sched {

PriorityBreakdown priority_of(const Job& j, double fairshare_factor, const PriorityScale& scale,
                              const Weights& w, TimeNs now) {
  PriorityBreakdown b;
  b.job = j.id;
  const TimeNs since = j.eligible_time.value_or(j.submit_time);
  b.age_factor =
      w.max_age > 0
          ? detail::clamp01(static_cast<double>(now - since) / static_cast<double>(w.max_age))
          : 0;
  b.fairshare_factor = fairshare_factor;
  const double total_gpus = scale.total_gpus;
  const double size = total_gpus > 0 ? detail::clamp01(j.gpus / total_gpus) : 0;
  b.job_size_factor = w.favor_small ? (total_gpus > 0 ? 1 - size : 0) : size;
  // Slurm normalises QOS priority by the largest one; a negative priority (nice) is shifted
  // so that it still ranks below zero.
  const int lo = scale.lowest;
  const int hi = scale.highest;
  b.qos_factor = hi > lo ? detail::clamp01(static_cast<double>(j.priority - lo) / (hi - lo)) : 0;
  b.age = w.age * b.age_factor;
  b.fairshare = w.fairshare * b.fairshare_factor;
  b.job_size = w.job_size * b.job_size_factor;
  b.qos = w.qos * b.qos_factor;
  b.total = b.age + b.fairshare + b.job_size + b.qos;
  return b;
}

double order_key(Order order, const Job& j, double priority_total, double fairshare_factor) {
  switch (order) {
    case Order::kPriority:
      return priority_total;
    case Order::kFairshare:
      return fairshare_factor;
    case Order::kSjf: {
      // Shortest expected run first; the time limit stands in for a missing estimate, and
      // jobs with neither go last.
      if (j.estimate) return -static_cast<double>(*j.estimate);
      if (j.time_limit > 0) return -static_cast<double>(j.time_limit);
      return -std::numeric_limits<double>::infinity();
    }
    case Order::kLas:
      return -static_cast<double>(j.attained);
    case Order::kFcfs:
      break;
  }
  return 0;
}

std::vector<double> fairshare_factors(
    const Usage& usage, const PolicyConfig& policy,
    const std::vector<std::pair<std::string, std::string>>& associations) {
  detail::FairShareTree tree(usage);
  std::vector<int> node(associations.size());
  for (std::size_t i = 0; i < associations.size(); ++i) {
    node[i] = tree.ensure(associations[i].first, associations[i].second);
  }
  tree.compute(usage, policy.dampening);
  std::vector<double> f(associations.size());
  for (std::size_t i = 0; i < associations.size(); ++i) {
    f[i] = tree.factor(node[i], policy.fair_tree);
  }
  return f;
}

}  // namespace cardiac::sched
