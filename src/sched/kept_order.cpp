// SPDX-License-Identifier: Apache-2.0
// The kept order: a recomputation is schedule()'s ranking; a pass in between merges the jobs
// seen for the first time into the kept order instead of sorting the whole queue.
#include "sched/kept_order.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

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

// What the placement state is built from, apart from health and what runs: GPU positions,
// memory, topology and models. Any change here rebuilds the state.
bool same_shape(const Node& a, const Node& b) {
  if (a.model != b.model || a.gpus.size() != b.gpus.size()) return false;
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const Gpu& x = a.gpus[i];
    const Gpu& y = b.gpus[i];
    if (x.index != y.index || x.memory_bytes != y.memory_bytes ||
        x.nvlink_domain != y.nvlink_domain || x.numa_node != y.numa_node ||
        x.memory_used_outside != y.memory_used_outside) {
      return false;
    }
  }
  return true;
}

bool usable(const Gpu& g) {
  return g.health != GpuHealth::kFenced && !g.busy_outside;
}

}  // namespace

// The nodes as last seen (no running jobs: those live in the state), the state and capacity
// built on them, and the ids of the running jobs the state holds, index-aligned.
struct KeptOrder::Live {
  explicit Live(const Cluster& cluster)
      : nodes{.nodes = cluster.nodes, .running = {}}, state(cluster), capacity(nodes) {
    ids.reserve(cluster.running.size());
    for (const Running& r : cluster.running) ids.push_back(r.id);
    for (const Node& n : cluster.nodes) {
      for (const Gpu& g : n.gpus) built_usable.push_back(usable(g) ? 1 : 0);
    }
  }

  Cluster nodes;
  detail::ClusterState state;
  detail::Capacity capacity;  // reads `nodes`
  std::vector<JobId> ids;
  std::vector<unsigned char> built_usable;  // per GPU: usable when the state was built
};

KeptOrder::KeptOrder(DurationNs calc_period) : period_(calc_period < 0 ? 0 : calc_period) {}
KeptOrder::~KeptOrder() = default;
KeptOrder::KeptOrder(KeptOrder&&) noexcept = default;
KeptOrder& KeptOrder::operator=(KeptOrder&&) noexcept = default;

KeptOrder::Live& KeptOrder::sync(const Cluster& cluster) {
  auto rebuild = [&]() -> Live& {
    ++rebuilds_;
    live_ = std::make_unique<Live>(cluster);
    return *live_;
  };
  if (!live_ || live_->nodes.nodes.size() != cluster.nodes.size()) return rebuild();
  Live& l = *live_;
  for (std::size_t n = 0; n < cluster.nodes.size(); ++n) {
    if (!same_shape(l.nodes.nodes[n], cluster.nodes[n])) return rebuild();
  }
  // Health: the state's memory classes count the GPUs usable when it was built, so one usable
  // again that was not then needs a rebuild; every other change is applied in place.
  for (unsigned n = 0; n < cluster.nodes.size(); ++n) {
    const std::vector<Gpu>& now = cluster.nodes[n].gpus;
    std::vector<Gpu>& was = l.nodes.nodes[n].gpus;
    for (unsigned i = 0; i < now.size(); ++i) {
      if (now[i].health == was[i].health && now[i].busy_outside == was[i].busy_outside) continue;
      const unsigned flat = l.state.nodes()[n].begin + i;
      if (usable(now[i]) && l.built_usable[flat] == 0) return rebuild();
      const bool fence = now[i].health == GpuHealth::kFenced;
      const bool fenced_before = was[i].health == GpuHealth::kFenced;
      was[i].health = now[i].health;
      was[i].busy_outside = now[i].busy_outside;
      l.state.set_usable(flat, usable(now[i]), now[i].health == GpuHealth::kDegraded);
      if (fence != fenced_before) l.capacity.fence_changed(n, fence);
    }
  }
  // Running jobs: the ones gone are released, the new ones applied; the rest keep their
  // allocation, in the new order. The live queue lists them in the same order every pass, so
  // a job is usually found where it was.
  bool same = l.ids.size() == cluster.running.size();
  for (std::size_t i = 0; same && i < cluster.running.size(); ++i) {
    same = l.ids[i] == cluster.running[i].id &&
           l.state.same_alloc(cluster.running[i], l.state.running()[i]);
  }
  if (same) return l;  // the usual pass: nothing started or ended since the last
  std::vector<detail::Alloc> old = l.state.take_running();
  std::vector<detail::Alloc> kept(cluster.running.size());
  std::vector<unsigned char> reused(old.size(), 0);
  std::vector<std::size_t> added;
  std::unordered_map<JobId, std::size_t> at;  // filled on the first job out of place
  for (std::size_t i = 0; i < cluster.running.size(); ++i) {
    const Running& r = cluster.running[i];
    std::size_t j = i;
    if (j >= l.ids.size() || l.ids[j] != r.id) {
      if (at.empty()) {
        for (std::size_t k = 0; k < l.ids.size(); ++k) at.emplace(l.ids[k], k);
      }
      auto it = at.find(r.id);
      j = it == at.end() ? old.size() : it->second;
    }
    if (j < old.size() && reused[j] == 0 && l.state.same_alloc(r, old[j])) {
      reused[j] = 1;
      kept[i] = std::move(old[j]);
    } else {
      added.push_back(i);
    }
  }
  for (std::size_t j = 0; j < old.size(); ++j) {
    if (reused[j] == 0) l.state.release(old[j]);
  }
  for (std::size_t i : added) {
    kept[i] = l.state.alloc_of(cluster.running[i]);
    l.state.apply(kept[i]);
  }
  l.state.set_running(std::move(kept));
  l.ids.clear();
  for (const Running& r : cluster.running) l.ids.push_back(r.id);
  return l;
}

std::vector<unsigned> KeptOrder::recompute(const Cluster& cluster, const std::vector<Job>& pending,
                                           const Usage& usage, const PolicyConfig& policy,
                                           TimeNs now) {
  ++recomputations_;
  calc_at_ = now;
  policy_ = policy_text(policy);
  detail::Ranking ranking =
      detail::rank_jobs(cluster, pending, usage, policy, policy.order, now, true);
  slots_.clear();
  slots_.reserve(pending.size());
  order_.clear();
  order_.reserve(pending.size());
  fairshare_.clear();
  // One factor per association: looked up once, not once per job.
  std::vector<unsigned char> noted(ranking.associations, 0);
  for (unsigned i : ranking.order) {
    const Job& j = pending[i];
    const PriorityBreakdown& b = ranking.priorities[i];
    order_.push_back(static_cast<unsigned>(slots_.size()));
    slots_.push_back(Kept{.key = order_key(policy.order, j, b.total, b.fairshare_factor),
                          .submit = j.submit_time,
                          .id = j.id,
                          .breakdown = b});
    const auto a = static_cast<std::size_t>(ranking.association[i]);
    if (noted[a] == 0) {
      noted[a] = 1;
      fairshare_.try_emplace({j.user, j.account}, b.fairshare_factor);
    }
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
  return std::move(ranking.order);
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

void KeptOrder::place_all(const std::vector<Job>& pending, const Usage& usage,
                          const PolicyConfig& policy, TimeNs now, std::vector<unsigned>& order,
                          std::vector<unsigned>& kept) {
  // Where each pending job stands in the kept order; the ones seen for the first time are
  // placed now and merged in. A job that left keeps its place until the next recomputation.
  // The live queue lists its jobs by id, as by_id_ is sorted: then a walk finds them all.
  std::vector<int> at(slots_.size(), -1);
  std::vector<std::pair<Kept, unsigned>> fresh;
  auto it = by_id_.begin();
  for (unsigned i = 0; i < pending.size(); ++i) {
    const JobId id = pending[i].id;
    if (i == 0 || id < pending[i - 1].id) {
      it = std::lower_bound(by_id_.begin(), by_id_.end(), std::make_pair(id, 0u));
    } else {
      while (it != by_id_.end() && it->first < id) ++it;
    }
    if (it != by_id_.end() && it->first == id) {
      at[it->second] = static_cast<int>(i);
    } else {
      fresh.emplace_back(place(pending[i], usage, policy, now), i);
    }
  }
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
  std::vector<unsigned> order;  // indices into `pending`
  std::vector<unsigned> kept;   // their slots, index-aligned
  if (due) {
    // Every pending job has the slot of its place in the new order.
    order = recompute(cluster, pending, usage, policy, now);
    kept.resize(order.size());
    std::iota(kept.begin(), kept.end(), 0u);
  } else {
    order.reserve(pending.size());
    kept.reserve(pending.size());
    place_all(pending, usage, policy, now, order, kept);
  }

  Live& live = sync(cluster);
  detail::IndexedPending ordered(pending, order);
  detail::OrderedPass pass = detail::run_ordered(cluster, live.state, live.capacity, ordered,
                                                 policy, now, finished_ok, false);
  // The state describes `cluster`: the starts are the caller's to make, and come back as
  // running jobs in a later cluster.
  for (const detail::Alloc& a : pass.allocs) live.state.release(a);
  ScheduleResult res = std::move(pass.result);
  res.order.reserve(kept.size());
  for (unsigned k : kept) res.order.push_back(slots_[k].id);
  if (policy.explain) {
    res.priorities.reserve(kept.size());
    for (unsigned k : kept) res.priorities.push_back(slots_[k].breakdown);
  }
  return res;
}

}  // namespace cardiac::sched
