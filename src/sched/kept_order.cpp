// SPDX-License-Identifier: Apache-2.0
// The kept order: a recomputation is schedule()'s ranking; a pass in between merges the jobs
// seen for the first time into the kept order instead of sorting the whole queue.
#include "sched/kept_order.h"

#include <algorithm>

#include "sched/capacity.h"
#include "sched/order.h"
#include "sched/pass.h"
#include "sched/state.h"

namespace cardiac::sched {
namespace {

template <class K>
bool before(const K& a, const K& b) {
  if (a.key != b.key) return a.key > b.key;
  if (a.submit != b.submit) return a.submit < b.submit;
  return a.id < b.id;
}

}  // namespace

void KeptOrder::recompute(const Cluster& cluster, const std::vector<Job>& pending,
                          const Usage& usage, const PolicyConfig& policy, TimeNs now) {
  ++recomputations_;
  calc_at_ = now;
  policy_ = policy_text(policy);
  const detail::Ranking ranking =
      detail::rank_jobs(cluster, pending, usage, policy, policy.order, now, true);
  slots_.clear();
  slots_.reserve(pending.size());
  order_.clear();
  fairshare_.clear();
  for (unsigned i : ranking.order) {
    const Job& j = pending[i];
    const PriorityBreakdown& b = ranking.priorities[i];
    order_.push_back(static_cast<unsigned>(slots_.size()));
    slots_.push_back(Kept{.key = order_key(policy.order, j, b.total, b.fairshare_factor),
                          .submit = j.submit_time,
                          .id = j.id,
                          .breakdown = b});
    fairshare_.try_emplace({j.user, j.account}, b.fairshare_factor);
  }
  // Listed in the caller's order, which is usually by id already (the database's): then no
  // sort is needed.
  std::vector<unsigned> slot_of(pending.size());
  for (unsigned k = 0; k < ranking.order.size(); ++k) slot_of[ranking.order[k]] = k;
  by_id_.clear();
  by_id_.reserve(pending.size());
  for (unsigned i = 0; i < pending.size(); ++i) by_id_.emplace_back(pending[i].id, slot_of[i]);
  if (!std::is_sorted(by_id_.begin(), by_id_.end())) std::sort(by_id_.begin(), by_id_.end());
  scale_ = PriorityScale{};
  for (const Node& n : cluster.nodes) scale_.total_gpus += static_cast<double>(n.gpus.size());
  for (const Job& j : pending) {
    scale_.lowest = std::min(scale_.lowest, j.priority);
    scale_.highest = std::max(scale_.highest, j.priority);
  }
}

KeptOrder::Kept KeptOrder::place(const Job& job, const Usage& usage, const PolicyConfig& policy,
                                 TimeNs now) {
  auto [it, added] = fairshare_.try_emplace({job.user, job.account}, 0.0);
  if (added) it->second = fairshare_factors(usage, policy, {it->first}).front();
  const PriorityBreakdown b = priority_of(job, it->second, scale_, policy.weights, now);
  return Kept{.key = order_key(policy.order, job, b.total, b.fairshare_factor),
              .submit = job.submit_time,
              .id = job.id,
              .breakdown = b};
}

ScheduleResult KeptOrder::pass(const Cluster& cluster, const std::vector<Job>& pending,
                               const Usage& usage, const PolicyConfig& policy, TimeNs now,
                               const std::vector<JobId>& finished_ok) {
  // A --priority outside the range of the last recomputation changes every job's QOS factor.
  const bool in_scale = std::all_of(pending.begin(), pending.end(), [&](const Job& j) {
    return j.priority >= scale_.lowest && j.priority <= scale_.highest;
  });
  const bool due = period_ == 0 || !calc_at_ || now < *calc_at_ || now - *calc_at_ >= period_ ||
                   !in_scale || policy_ != policy_text(policy);
  if (due) recompute(cluster, pending, usage, policy, now);

  // Where each pending job stands in the kept order; the ones seen for the first time are
  // placed now and merged in. A job that left keeps its place until the next recomputation.
  std::vector<int> at(slots_.size(), -1);
  std::vector<std::pair<Kept, unsigned>> fresh;
  for (unsigned i = 0; i < pending.size(); ++i) {
    const JobId id = pending[i].id;
    auto it = std::lower_bound(by_id_.begin(), by_id_.end(), std::make_pair(id, 0u));
    if (it != by_id_.end() && it->first == id) {
      at[it->second] = static_cast<int>(i);
    } else {
      fresh.emplace_back(place(pending[i], usage, policy, now), i);
    }
  }
  std::vector<unsigned> order;  // indices into `pending`
  std::vector<unsigned> kept;   // their slots, index-aligned
  order.reserve(pending.size());
  kept.reserve(pending.size());
  if (fresh.empty()) {
    for (unsigned k : order_) {
      if (at[k] < 0) continue;
      order.push_back(static_cast<unsigned>(at[k]));
      kept.push_back(k);
    }
  } else {
    std::sort(fresh.begin(), fresh.end(),
              [](const auto& a, const auto& b) { return before(a.first, b.first); });
    std::vector<unsigned> merged;
    merged.reserve(order_.size() + fresh.size());
    std::size_t f = 0;
    for (std::size_t k = 0; k <= order_.size(); ++k) {
      // The fresh jobs that go before the k-th kept one (all that are left after the last).
      while (f < fresh.size() &&
             (k == order_.size() || before(fresh[f].first, slots_[order_[k]]))) {
        const auto slot = static_cast<unsigned>(slots_.size());
        slots_.push_back(fresh[f].first);
        by_id_.insert(
            std::upper_bound(by_id_.begin(), by_id_.end(), std::make_pair(fresh[f].first.id, slot)),
            {fresh[f].first.id, slot});
        merged.push_back(slot);
        order.push_back(fresh[f].second);
        kept.push_back(slot);
        ++f;
      }
      if (k == order_.size()) continue;
      // A job not pending now keeps its place: one requeued before the next recomputation
      // comes back to it.
      merged.push_back(order_[k]);
      if (at[order_[k]] >= 0) {
        order.push_back(static_cast<unsigned>(at[order_[k]]));
        kept.push_back(order_[k]);
      }
    }
    order_ = std::move(merged);
  }

  detail::ClusterState state(cluster);
  detail::Capacity capacity(cluster);
  detail::IndexedPending ordered(pending, order);
  ScheduleResult res =
      detail::run_ordered(cluster, state, capacity, ordered, policy, now, finished_ok, false)
          .result;
  res.order.reserve(kept.size());
  for (unsigned k : kept) res.order.push_back(slots_[k].id);
  if (policy.explain) {
    res.priorities.reserve(kept.size());
    for (unsigned k : kept) res.priorities.push_back(slots_[k].breakdown);
  }
  return res;
}

}  // namespace cardiac::sched
