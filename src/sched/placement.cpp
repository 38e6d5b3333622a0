// SPDX-License-Identifier: Apache-2.0
// Placement: which node(s) and which GPUs a job gets. Nodes are found through the free-count
// buckets (pack: the fullest node that fits; spread: the emptiest), GPUs on a node by NVLink
// domain, then NUMA node, degraded GPUs last. A job with a model list sees only its models' nodes:
// each bucket is read through that node set, so jobs without one pay nothing for it.
#include <algorithm>
#include <limits>

#include "sched/state.h"

namespace cardiac::sched::detail {
namespace {

// Takes n GPUs from `pool` (flat ids in index order), keeping them together: the smallest
// NVLink domain that holds them all, else the smallest NUMA node, else domain by domain.
// Best fit leaves the larger groups whole for larger jobs.
void take_grouped(const std::vector<GpuPlace>& gpus, std::vector<unsigned>& pool, unsigned n,
                  std::vector<unsigned>& out) {
  if (n == 0) return;
  if (pool.size() > n) {
    for (int by_numa = 0; by_numa < 2; ++by_numa) {
      auto key = [&](unsigned g) { return by_numa ? gpus[g].numa : gpus[g].domain; };
      int best = -1;
      std::size_t best_count = std::numeric_limits<std::size_t>::max();
      for (unsigned g : pool) {
        const int k = key(g);
        if (k < 0) continue;
        const auto c = static_cast<std::size_t>(
            std::count_if(pool.begin(), pool.end(), [&](unsigned h) { return key(h) == k; }));
        if (c >= n && (c < best_count || (c == best_count && k < best))) {
          best = k;
          best_count = c;
        }
      }
      if (best >= 0) {
        std::erase_if(pool, [&](unsigned g) { return key(g) != best; });
        break;
      }
    }
    // A stable insertion sort by domain: a node's GPUs are few, and std::stable_sort's buffer
    // was an allocation per pick.
    auto domain = [&](unsigned g) {
      return gpus[g].domain < 0 ? std::numeric_limits<int>::max() : gpus[g].domain;
    };
    for (std::size_t i = 1; i < pool.size(); ++i) {
      const unsigned g = pool[i];
      std::size_t j = i;
      for (; j > 0 && domain(g) < domain(pool[j - 1]); --j) pool[j] = pool[j - 1];
      pool[j] = g;
    }
  }
  out.insert(out.end(), pool.begin(), pool.begin() + std::min<std::size_t>(n, pool.size()));
}

bool allowed(const Need& need, unsigned node) {
  return need.allowed == nullptr || need.allowed->contains(node);
}

// The first member of `set` >= from that the job may use.
unsigned first(const NodeSet& set, const Need& need, unsigned from) {
  return need.allowed == nullptr ? set.next(from) : set.next_and(*need.allowed, from);
}

unsigned count(const NodeSet& set, const Need& need) {
  return need.allowed == nullptr ? set.size() : set.count_and(*need.allowed);
}

// Pack prefers fewer free GPUs, spread more; then the lower node index.
bool better(unsigned count, unsigned node, unsigned best_count, unsigned best_node, bool spread) {
  if (best_node == NodeSet::kNone) return true;
  if (count != best_count) return spread ? count > best_count : count < best_count;
  return node < best_node;
}

}  // namespace

void ClusterState::choose_gpus(unsigned node, unsigned n, Phase p, const Need& need,
                               std::vector<unsigned>& out) const {
  const NodeSlot& ns = nodes_[node];
  // Scratch kept by the state: a 4,096-GPU job picks GPUs on 512 nodes, each pick three
  // vectors that were allocated and freed every time.
  std::vector<unsigned>& ok = scratch_[0];
  std::vector<unsigned>& degraded = scratch_[1];
  std::vector<unsigned>& first = scratch_[2];
  ok.clear();
  degraded.clear();
  first.clear();
  if (need.shared) {
    // Already shared GPUs first (packing by memory), tightest fit first, degraded last.
    for (unsigned i = ns.begin; i < ns.begin + ns.count; ++i) {
      const GpuSlot& s = gpus_[i];
      if (s.usable && s.exclusive == 0 && s.room() >= need.memory &&
          (p == Phase::kAll || !s.degraded)) {
        ok.push_back(i);
      }
    }
    std::stable_sort(ok.begin(), ok.end(), [&](unsigned a, unsigned b) {
      const GpuSlot& x = gpus_[a];
      const GpuSlot& y = gpus_[b];
      if (x.degraded != y.degraded) return !x.degraded;
      if ((x.shared_jobs > 0) != (y.shared_jobs > 0)) return x.shared_jobs > 0;
      return x.room() < y.room();
    });
    out.insert(out.end(), ok.begin(), ok.begin() + std::min<std::size_t>(n, ok.size()));
    return;
  }
  for (unsigned i = ns.begin; i < ns.begin + ns.count; ++i) {
    const GpuSlot& s = gpus_[i];
    if (!s.is_free() || s.cap < need.memory) continue;
    (s.degraded ? degraded : ok).push_back(i);
  }
  // Preferred GPUs first within each health class; grouping only among what is left.
  auto take = [&](std::vector<unsigned>& pool, unsigned k) {
    if (!prefer_.empty()) {
      std::erase_if(pool, [&](unsigned g) {
        if (prefer_[g] == 0) return false;
        first.push_back(g);
        return true;
      });
      if (first.size() >= k) {
        take_grouped(places_, first, k, out);
        return;
      }
      k -= static_cast<unsigned>(first.size());
      out.insert(out.end(), first.begin(), first.end());
    }
    take_grouped(places_, pool, k, out);
  };
  if (ok.size() >= n) {
    take(ok, n);
    return;
  }
  const auto rest = n - static_cast<unsigned>(ok.size());
  out.insert(out.end(), ok.begin(), ok.end());
  take(degraded, rest);
}

std::optional<unsigned> ClusterState::best_single(Phase p, const Need& need, bool spread) const {
  const unsigned ncls = classes_for(need.memory);
  unsigned best = NodeSet::kNone;
  unsigned best_count = 0;
  for (unsigned step = 0; step + need.gpus <= max_c_; ++step) {
    const unsigned c = spread ? max_c_ - step : need.gpus + step;
    for (unsigned k = 0; k < ncls; ++k) {
      const NodeSet& b = bucket(p, k, c);
      if (b.empty()) continue;
      const unsigned n = first(b, need, 0);
      if (n < best) best = n;
    }
    if (best != NodeSet::kNone) {
      best_count = c;
      break;
    }
  }
  for (unsigned n : scan_nodes_) {
    const NodeSlot& ns = nodes_[n];
    if (class_cap_[ns.cls] >= need.memory || ns.max_cap < need.memory) continue;
    if (!allowed(need, n)) continue;
    const unsigned c = scan_count(n, p, need.memory, false);
    if (c >= need.gpus && better(c, n, best_count, best, spread)) {
      best = n;
      best_count = c;
    }
  }
  if (best == NodeSet::kNone) return std::nullopt;
  return best;
}

std::optional<Alloc> ClusterState::find_single(const Need& need, bool spread) const {
  for (Phase p : {Phase::kOk, Phase::kAll}) {
    if (auto n = best_single(p, need, spread)) {
      Alloc a{.gpus = {}, .shared = need.shared, .memory = need.memory};
      a.gpus.reserve(need.gpus);
      choose_gpus(*n, need.gpus, p, need, a.gpus);
      return a;
    }
  }
  return std::nullopt;
}

std::optional<Alloc> ClusterState::find_shared(const Need& need, bool spread) const {
  for (Phase p : {Phase::kOk, Phase::kAll}) {
    // Nodes that already host shared jobs: the most already-shared GPUs used wins, so shared
    // work stays packed and whole GPUs stay free for exclusive jobs.
    unsigned best = NodeSet::kNone;
    unsigned best_use = 0;
    unsigned best_count = 0;
    for (unsigned n = first(shared_nodes_, need, 0); n != NodeSet::kNone;
         n = first(shared_nodes_, need, n + 1)) {
      const NodeSlot& ns = nodes_[n];
      unsigned shared = 0;
      unsigned free = 0;
      for (unsigned i = ns.begin; i < ns.begin + ns.count; ++i) {
        const GpuSlot& s = gpus_[i];
        if (p == Phase::kOk && s.degraded) continue;
        if (s.is_shared() && s.room() >= need.memory) ++shared;
        if (s.is_free() && s.cap >= need.memory) ++free;
      }
      if (shared == 0 || shared + free < need.gpus) continue;
      const unsigned use = std::min(shared, need.gpus);
      if (best == NodeSet::kNone || use > best_use ||
          (use == best_use && better(shared + free, n, best_count, best, spread))) {
        best = n;
        best_use = use;
        best_count = shared + free;
      }
    }
    if (best == NodeSet::kNone) {
      if (auto n = best_single(p, need, spread)) best = *n;
    }
    if (best != NodeSet::kNone) {
      Alloc a{.gpus = {}, .shared = true, .memory = need.memory};
      a.gpus.reserve(need.gpus);
      choose_gpus(best, need.gpus, p, need, a.gpus);
      return a;
    }
  }
  return std::nullopt;
}

unsigned ClusterState::count_at_least(Phase p, unsigned c, const Need& need,
                                      const std::vector<unsigned>& scanned) const {
  const unsigned ncls = classes_for(need.memory);
  unsigned total = 0;
  for (unsigned k = 0; k < ncls; ++k) {
    for (unsigned x = c; x <= max_c_; ++x) total += count(bucket(p, k, x), need);
  }
  for (unsigned n : scanned) total += scan_count(n, p, need.memory, false) >= c ? 1 : 0;
  return total;
}

std::vector<unsigned> ClusterState::pick_nodes(Phase p, const Need& need, unsigned k, bool spread,
                                               const std::vector<unsigned>& scanned) const {
  const unsigned q = need.gpus / k;
  const unsigned r = need.gpus % k;
  const unsigned ncls = classes_for(need.memory);
  // Both sized once: grown node by node they were reallocated about log2(k) times per
  // multi-node start.
  std::vector<unsigned> taken;
  taken.reserve(k);
  std::vector<unsigned> level;
  level.reserve(k);
  auto is_taken = [&](unsigned n) {
    return std::find(taken.begin(), taken.end(), n) != taken.end();
  };
  // Walks free-count levels in preference order; within a level, nodes by index.
  auto take = [&](unsigned lo, std::size_t want) {
    const std::size_t target = taken.size() + want;
    for (unsigned step = 0; step + lo <= max_c_ && taken.size() < target; ++step) {
      const unsigned c = spread ? max_c_ - step : lo + step;
      level.clear();
      for (unsigned cls = 0; cls < ncls; ++cls) {
        const NodeSet& b = bucket(p, cls, c);
        std::size_t got = 0;
        for (unsigned n = first(b, need, 0); n != NodeSet::kNone && got < target - taken.size();
             n = first(b, need, n + 1)) {
          if (is_taken(n)) continue;
          level.push_back(n);
          ++got;
        }
      }
      for (unsigned n : scanned) {
        if (!is_taken(n) && scan_count(n, p, need.memory, false) == c) level.push_back(n);
      }
      std::sort(level.begin(), level.end());
      for (unsigned n : level) {
        if (taken.size() >= target) break;
        taken.push_back(n);
      }
    }
  };
  take(q + 1, r);
  take(q, k - r);
  return taken;
}

std::optional<ClusterState::MultiShape> ClusterState::multi_shape(const Need& need) const {
  MultiShape shape;
  for (unsigned n : scan_nodes_) {
    const NodeSlot& ns = nodes_[n];
    if (class_cap_[ns.cls] < need.memory && ns.max_cap >= need.memory && allowed(need, n)) {
      shape.scanned.push_back(n);
    }
  }
  // Cheap refusal first: a busy cluster usually has fewer free GPUs than the job needs.
  const unsigned ncls = classes_for(need.memory);
  unsigned long long total = 0;
  for (unsigned k = 0; k < ncls; ++k) {
    for (unsigned c = 1; c <= max_c_; ++c) {
      total += static_cast<unsigned long long>(c) * count(bucket(Phase::kAll, k, c), need);
    }
  }
  for (unsigned n : shape.scanned) total += scan_count(n, Phase::kAll, need.memory, false);
  if (total < need.gpus || max_c_ == 0) return std::nullopt;

  const unsigned max_k =
      std::min({need.max_nodes, static_cast<unsigned>(nodes_.size()), need.gpus});
  for (unsigned k = (need.gpus + max_c_ - 1) / max_c_; k <= max_k; ++k) {
    const unsigned q = need.gpus / k;
    const unsigned r = need.gpus % k;
    for (Phase p : {Phase::kOk, Phase::kAll}) {
      if (r > 0 && count_at_least(p, q + 1, need, shape.scanned) < r) continue;
      if (count_at_least(p, q, need, shape.scanned) < k) continue;
      shape.nodes = k;
      shape.phase = p;
      return shape;
    }
  }
  return std::nullopt;
}

std::optional<Alloc> ClusterState::find_multi(const Need& need, bool spread) const {
  if (need.shared) return find_multi_scan(need, spread);
  const std::optional<MultiShape> shape = multi_shape(need);
  if (!shape) return std::nullopt;
  const unsigned k = shape->nodes;
  const unsigned q = need.gpus / k;
  const unsigned r = need.gpus % k;
  const std::vector<unsigned> nodes = pick_nodes(shape->phase, need, k, spread, shape->scanned);
  Alloc a{.gpus = {}, .shared = false, .memory = need.memory};
  a.gpus.reserve(need.gpus);  // one allocation, not one per node appended
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    choose_gpus(nodes[i], i < r ? q + 1 : q, shape->phase, need, a.gpus);
  }
  return a;
}

std::optional<Alloc> ClusterState::find_multi_scan(const Need& need, bool spread) const {
  const unsigned max_k =
      std::min({need.max_nodes, static_cast<unsigned>(nodes_.size()), need.gpus});
  std::vector<std::pair<unsigned, unsigned>> counts[2];  // (eligible GPUs, node) per phase
  for (int p = 0; p < 2; ++p) {
    for (unsigned n = 0; n < nodes_.size(); ++n) {
      if (!allowed(need, n)) continue;
      const unsigned c = scan_count(n, p == 0 ? Phase::kOk : Phase::kAll, need.memory, true);
      if (c > 0) counts[p].emplace_back(c, n);
    }
    std::sort(counts[p].begin(), counts[p].end(), [&](const auto& a, const auto& b) {
      return better(a.first, a.second, b.first, b.second, spread);
    });
  }
  for (unsigned k = 1; k <= max_k; ++k) {
    const unsigned q = need.gpus / k;
    const unsigned r = need.gpus % k;
    for (int p = 0; p < 2; ++p) {
      const auto& cs = counts[p];
      std::vector<unsigned> picked;
      std::vector<bool> used(cs.size(), false);
      for (std::size_t i = 0; i < cs.size() && picked.size() < r; ++i) {
        if (cs[i].first >= q + 1) {
          picked.push_back(cs[i].second);
          used[i] = true;
        }
      }
      if (picked.size() < r) continue;
      for (std::size_t i = 0; i < cs.size() && picked.size() < k; ++i) {
        if (!used[i] && cs[i].first >= q) picked.push_back(cs[i].second);
      }
      if (picked.size() < k) continue;
      Alloc a{.gpus = {}, .shared = true, .memory = need.memory};
      a.gpus.reserve(need.gpus);
      for (std::size_t i = 0; i < picked.size(); ++i) {
        choose_gpus(picked[i], i < r ? q + 1 : q, p == 0 ? Phase::kOk : Phase::kAll, need, a.gpus);
      }
      return a;
    }
  }
  return std::nullopt;
}

std::optional<Alloc> ClusterState::find(const Need& need, bool spread) const {
  if (need.gpus == 0) return Alloc{.gpus = {}, .shared = need.shared, .memory = need.memory};
  if (need.max_nodes > 1 && need.gpus > 1) return find_multi(need, spread);
  if (need.shared) return find_shared(need, spread);
  return find_single(need, spread);
}

Alloc ClusterState::prefer_busy(const Need& need, const Alloc& found,
                                const std::vector<const Alloc*>& released) {
  if (found.gpus.empty() || released.empty()) return found;
  std::vector<unsigned> busy;  // GPUs free at the reservation only because `released` ended
  for (const Alloc* r : released) {
    for (unsigned g : r->gpus) {
      if (gpus_[g].is_free()) busy.push_back(g);
    }
  }
  if (busy.empty()) return found;
  prefer(busy, true);
  Alloc a{.gpus = {}, .shared = found.shared, .memory = found.memory};
  a.gpus.reserve(found.gpus.size());
  if (need.shared || need.max_nodes > 1) {
    // The placement's nodes, busy GPUs first on each.
    std::vector<std::pair<unsigned, unsigned>> per_node;  // (node, GPUs)
    for (unsigned g : found.gpus) {
      const unsigned n = node_of_[g];
      // A placement comes node by node: the last node is the one, but for odd inputs (a
      // search over every node per GPU was most of a 4,096-GPU reservation).
      auto it = !per_node.empty() && per_node.back().first == n
                    ? per_node.end() - 1
                    : std::find_if(per_node.begin(), per_node.end(),
                                   [&](const auto& p) { return p.first == n; });
      if (it == per_node.end()) {
        per_node.emplace_back(n, 1);
      } else {
        ++it->second;
      }
    }
    for (const auto& [n, k] : per_node) choose_gpus(n, k, Phase::kAll, need, a.gpus);
  } else {
    // The node whose reservation takes the fewest GPUs idle now; then find's own choice, then
    // the fuller node. Nodes without a busy GPU cannot do better than find's.
    const unsigned chosen = node_of_[found.gpus.front()];
    std::vector<unsigned> nodes{chosen};
    for (unsigned g : busy) nodes.push_back(node_of_[g]);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    unsigned best = NodeSet::kNone;
    unsigned best_idle = 0;
    unsigned best_free = 0;
    for (unsigned n : nodes) {
      if (!allowed(need, n)) continue;
      const NodeSlot& ns = nodes_[n];
      unsigned free = 0;
      unsigned pref = 0;
      for (unsigned i = ns.begin; i < ns.begin + ns.count; ++i) {
        const GpuSlot& s = gpus_[i];
        if (!s.is_free() || s.cap < need.memory) continue;
        ++free;
        pref += prefer_[i];
      }
      if (free < need.gpus) continue;
      const unsigned idle = need.gpus - std::min(need.gpus, pref);
      const bool take = best == NodeSet::kNone || idle < best_idle ||
                        (idle == best_idle && best != chosen &&
                         (n == chosen || better(free, n, best_free, best, false)));
      if (take) {
        best = n;
        best_idle = idle;
        best_free = free;
      }
    }
    if (best == NodeSet::kNone) best = chosen;
    choose_gpus(best, need.gpus, Phase::kAll, need, a.gpus);
  }
  prefer(busy, false);
  if (a.gpus.size() != found.gpus.size()) return found;
  return a;
}

bool ClusterState::fits(const Need& need) const {
  // An exclusive multi-node request fits once its node count and phase are found: picking the
  // nodes and their GPUs (most of a 4,096-GPU search, once per end time the reservation tries)
  // cannot fail after that.
  if (need.gpus > 1 && need.max_nodes > 1 && !need.shared) return multi_shape(need).has_value();
  if (need.gpus == 0 || need.shared || (need.max_nodes > 1 && need.gpus > 1)) {
    return find(need, false).has_value();
  }
  return best_single(Phase::kAll, need, false).has_value();
}

}  // namespace cardiac::sched::detail
