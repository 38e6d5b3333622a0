// SPDX-License-Identifier: Apache-2.0
// Building the per-pass cluster state and keeping its counts and indexes right as jobs start,
// end (in the reservation's timeline) and GPUs are masked.
#include "sched/state.h"

#include <algorithm>

namespace cardiac::sched::detail {
namespace {

// More memory classes than this cost more in bucket upkeep than scanning the odd nodes does.
constexpr std::size_t kMaxClasses = 16;

std::vector<std::uint64_t> pick_classes(std::vector<std::uint64_t> caps) {
  std::sort(caps.begin(), caps.end(), std::greater<>());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  if (caps.empty()) caps.push_back(0);
  if (caps.size() <= kMaxClasses) return caps;
  // Spread the kept classes over the range and keep the smallest, so every node still has a
  // class at or below its own smallest GPU.
  std::vector<std::uint64_t> kept;
  for (std::size_t i = 0; i < kMaxClasses; ++i) {
    kept.push_back(caps[i * (caps.size() - 1) / (kMaxClasses - 1)]);
  }
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

}  // namespace

ClusterState::ClusterState(const Cluster& cluster) {
  nodes_.resize(cluster.nodes.size());
  std::vector<std::uint64_t> min_caps(cluster.nodes.size(), 0);
  for (std::size_t n = 0; n < cluster.nodes.size(); ++n) {
    NodeSlot& node = nodes_[n];
    node.begin = static_cast<unsigned>(gpus_.size());
    node.count = static_cast<unsigned>(cluster.nodes[n].gpus.size());
    max_c_ = std::max(max_c_, node.count);
    bool any = false;
    for (const Gpu& g : cluster.nodes[n].gpus) {
      GpuSlot s;
      s.cap = g.memory_bytes > g.memory_used_outside ? g.memory_bytes - g.memory_used_outside : 0;
      s.usable = g.health != GpuHealth::kFenced && !g.busy_outside;
      s.degraded = g.health == GpuHealth::kDegraded;
      if (s.usable) {
        min_caps[n] = any ? std::min(min_caps[n], s.cap) : s.cap;
        node.max_cap = std::max(node.max_cap, s.cap);
        any = true;
      }
      gpus_.push_back(s);
      places_.push_back(GpuPlace{.index = g.index, .domain = g.nvlink_domain, .numa = g.numa_node});
      node_of_.push_back(static_cast<unsigned>(n));
    }
  }

  running_.reserve(cluster.running.size());
  for (const Running& r : cluster.running) {
    Alloc a = alloc_of(r);
    for (unsigned flat : a.gpus) {
      GpuSlot& g = gpus_[flat];
      if (a.shared) {
        ++g.shared_jobs;
        g.shared_used += a.memory;
      } else {
        ++g.exclusive;
      }
    }
    running_.push_back(std::move(a));
  }

  class_cap_ = pick_classes(min_caps);
  const std::size_t buckets = class_cap_.size() * (max_c_ + 1);
  all_.resize(buckets);
  ok_.resize(buckets);
  for (NodeSet& s : all_) s.resize(static_cast<unsigned>(nodes_.size()));
  for (NodeSet& s : ok_) s.resize(static_cast<unsigned>(nodes_.size()));
  shared_nodes_.resize(static_cast<unsigned>(nodes_.size()));

  for (unsigned n = 0; n < nodes_.size(); ++n) {
    NodeSlot& node = nodes_[n];
    node.cls = static_cast<unsigned>(class_cap_.size() - 1);
    for (unsigned k = 0; k < class_cap_.size(); ++k) {
      if (class_cap_[k] <= min_caps[n]) {
        node.cls = k;
        break;
      }
    }
    if (class_cap_[node.cls] < node.max_cap) scan_nodes_.push_back(n);
    for (unsigned i = node.begin; i < node.begin + node.count; ++i) {
      const GpuSlot& s = gpus_[i];
      if (s.is_free()) {
        ++node.free;
        ++free_gpus_;
        if (!s.degraded) ++node.free_ok;
      }
      if (s.is_shared()) ++node.shared;
    }
    bucket(Phase::kAll, node.cls, node.free).insert(n);
    bucket(Phase::kOk, node.cls, node.free_ok).insert(n);
    if (node.shared > 0) shared_nodes_.insert(n);
  }

  for (unsigned n = 0; n < nodes_.size(); ++n) {
    const std::string& model = cluster.nodes[n].model;
    if (model.empty()) continue;
    auto it = model_nodes_.find(model);
    if (it == model_nodes_.end()) {
      it = model_nodes_.emplace(model, NodeSet{}).first;
      it->second.resize(static_cast<unsigned>(nodes_.size()));
    }
    it->second.insert(n);
  }
}

Need ClusterState::need_of(const Job& job) const {
  Need need{.gpus = job.gpus,
            .max_nodes = std::max(1u, job.nodes),
            .memory = job.gpu_memory,
            .shared = job.shared};
  if (job.models.empty()) return need;
  auto it = allowed_.find(job.models);
  if (it == allowed_.end()) {
    NodeSet set;
    set.resize(static_cast<unsigned>(nodes_.size()));
    for (const std::string& m : job.models) {
      if (auto found = model_nodes_.find(m); found != model_nodes_.end()) set.unite(found->second);
    }
    it = allowed_.emplace(job.models, std::move(set)).first;
  }
  need.allowed = &it->second;
  return need;
}

unsigned ClusterState::flat_index(const NodeSlot& node, unsigned idx) const {
  // Indices are normally positions; look further only when they are not.
  if (idx < node.count && places_[node.begin + idx].index == idx) return node.begin + idx;
  unsigned flat = ~0u;
  for (unsigned i = node.begin; i < node.begin + node.count; ++i) {
    if (places_[i].index == idx) flat = i;
  }
  return flat;
}

namespace {

TimeNs end_of(const Running& r) {
  return r.time_limit > 0 ? r.start_time + r.time_limit : kNoEnd;
}

}  // namespace

Alloc ClusterState::alloc_of(const Running& r) const {
  Alloc a{.gpus = {}, .shared = r.shared, .memory = r.gpu_memory, .end = end_of(r)};
  for (const NodeGpus& ng : r.placement) {
    if (ng.node >= nodes_.size()) continue;
    const NodeSlot& node = nodes_[ng.node];
    for (unsigned idx : ng.gpus) {
      if (const unsigned flat = flat_index(node, idx); flat != ~0u) a.gpus.push_back(flat);
    }
  }
  return a;
}

bool ClusterState::same_alloc(const Running& r, const Alloc& a) const {
  if (r.shared != a.shared || r.gpu_memory != a.memory || end_of(r) != a.end) return false;
  std::size_t k = 0;
  for (const NodeGpus& ng : r.placement) {
    if (ng.node >= nodes_.size()) continue;
    const NodeSlot& node = nodes_[ng.node];
    for (unsigned idx : ng.gpus) {
      const unsigned flat = flat_index(node, idx);
      if (flat == ~0u) continue;
      if (k >= a.gpus.size() || a.gpus[k] != flat) return false;
      ++k;
    }
  }
  return k == a.gpus.size();
}

void ClusterState::adopt(Alloc a) {
  running_.push_back(std::move(a));
}

void ClusterState::end_running(std::size_t i) {
  release(running_[i]);
  if (i + 1 != running_.size()) running_[i] = std::move(running_.back());
  running_.pop_back();
}

void ClusterState::set_usable(unsigned g, bool usable, bool degraded) {
  ++version_;
  const GpuSlot before = gpus_[g];
  gpus_[g].usable = usable;
  gpus_[g].degraded = degraded;
  update_gpu(g, before);
}

unsigned ClusterState::classes_for(std::uint64_t memory) const {
  unsigned k = 0;
  while (k < class_cap_.size() && class_cap_[k] >= memory) ++k;
  return k;
}

ClusterState::Delta ClusterState::delta(const GpuSlot& before, const GpuSlot& after) {
  return Delta{
      .free = static_cast<int>(after.is_free()) - static_cast<int>(before.is_free()),
      .ok = static_cast<int>(after.is_free() && !after.degraded) -
            static_cast<int>(before.is_free() && !before.degraded),
      .shared = static_cast<int>(after.is_shared()) - static_cast<int>(before.is_shared())};
}

void ClusterState::adjust(unsigned n, const Delta& d) {
  NodeSlot& node = nodes_[n];
  free_gpus_ = static_cast<unsigned>(static_cast<int>(free_gpus_) + d.free);
  if (d.free != 0) {
    bucket(Phase::kAll, node.cls, node.free).erase(n);
    node.free = static_cast<unsigned>(static_cast<int>(node.free) + d.free);
    bucket(Phase::kAll, node.cls, node.free).insert(n);
  }
  if (d.ok != 0) {
    bucket(Phase::kOk, node.cls, node.free_ok).erase(n);
    node.free_ok = static_cast<unsigned>(static_cast<int>(node.free_ok) + d.ok);
    bucket(Phase::kOk, node.cls, node.free_ok).insert(n);
  }
  if (d.shared != 0) {
    node.shared = static_cast<unsigned>(static_cast<int>(node.shared) + d.shared);
    if (node.shared > 0) {
      shared_nodes_.insert(n);
    } else {
      shared_nodes_.erase(n);
    }
  }
}

void ClusterState::update_gpu(unsigned g, const GpuSlot& before) {
  adjust(node_of_[g], delta(before, gpus_[g]));
}

// The indexes move once per run of GPUs on one node, not once per GPU: a 4,096-GPU start or
// end touches each bucket 512 times instead of 4,096. The sets end up the same either way.
template <class Change>
void ClusterState::change_each(const std::vector<unsigned>& gs, Change&& change) {
  for (std::size_t i = 0; i < gs.size();) {
    const unsigned n = node_of_[gs[i]];
    Delta d;
    for (; i < gs.size() && node_of_[gs[i]] == n; ++i) {
      GpuSlot& s = gpus_[gs[i]];
      const GpuSlot before = s;
      change(s);
      d += delta(before, s);
    }
    adjust(n, d);
  }
}

std::optional<std::uint64_t> ClusterState::most_shared_room() const {
  std::optional<std::uint64_t> most;
  for (unsigned n = shared_nodes_.next(0); n != NodeSet::kNone; n = shared_nodes_.next(n + 1)) {
    const NodeSlot& node = nodes_[n];
    for (unsigned g = node.begin; g < node.begin + node.count; ++g) {
      if (gpus_[g].is_shared()) most = std::max(most.value_or(0), gpus_[g].room());
    }
  }
  return most;
}

void ClusterState::apply(const Alloc& a) {
  ++version_;
  change_each(a.gpus, [&](GpuSlot& s) {
    if (a.shared) {
      ++s.shared_jobs;
      s.shared_used += a.memory;
    } else {
      ++s.exclusive;
    }
  });
}

void ClusterState::release(const Alloc& a) {
  ++version_;
  change_each(a.gpus, [&](GpuSlot& s) {
    if (a.shared) {
      if (s.shared_jobs > 0) --s.shared_jobs;
      s.shared_used = s.shared_used > a.memory ? s.shared_used - a.memory : 0;
    } else if (s.exclusive > 0) {
      --s.exclusive;
    }
  });
}

// Once per run of GPUs on one node, as change_each: a reservation's hidden GPUs come node by
// node, and a backfill pass hides and shows them at least once.
void ClusterState::unmask(const std::vector<unsigned>& gpus) {
  change_each(gpus, [](GpuSlot& s) { s.usable = true; });
}

void ClusterState::mask(const std::vector<unsigned>& gpus) {
  change_each(gpus, [](GpuSlot& s) { s.usable = false; });
}

void ClusterState::prefer(const std::vector<unsigned>& gpus, bool on) {
  if (gpus.empty()) return;
  if (prefer_.empty()) prefer_.assign(gpus_.size(), 0);
  for (unsigned g : gpus) prefer_[g] = on ? 1 : 0;
}

std::vector<NodeGpus> ClusterState::to_placement(const Alloc& a) const {
  // Placements come out node by node in index order already; only others pay for a sort.
  std::vector<unsigned> sorted_copy;
  const bool sorted = std::is_sorted(a.gpus.begin(), a.gpus.end());
  if (!sorted) {
    sorted_copy = a.gpus;
    std::sort(sorted_copy.begin(), sorted_copy.end());
  }
  const std::vector<unsigned>& flat = sorted ? a.gpus : sorted_copy;
  // Sized once: grown node by node, it reallocated (and moved every node's list) about
  // log2(nodes) times per start.
  std::size_t nodes = 0;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    nodes += i == 0 || node_of_[flat[i]] != node_of_[flat[i - 1]] ? 1 : 0;
  }
  std::vector<NodeGpus> out;
  out.reserve(nodes);
  for (std::size_t i = 0; i < flat.size();) {
    const unsigned n = node_of_[flat[i]];
    std::size_t end = i;
    while (end < flat.size() && node_of_[flat[end]] == n) ++end;
    NodeGpus& ng = out.emplace_back(NodeGpus{.node = n, .gpus = {}});
    ng.gpus.reserve(end - i);
    for (; i < end; ++i) ng.gpus.push_back(places_[flat[i]].index);
    if (!std::is_sorted(ng.gpus.begin(), ng.gpus.end())) std::sort(ng.gpus.begin(), ng.gpus.end());
  }
  return out;
}

unsigned ClusterState::scan_count(unsigned node, Phase p, std::uint64_t memory, bool shared) const {
  const NodeSlot& ns = nodes_[node];
  unsigned c = 0;
  for (unsigned i = ns.begin; i < ns.begin + ns.count; ++i) {
    const GpuSlot& s = gpus_[i];
    if (p == Phase::kOk && s.degraded) continue;
    if (shared ? (s.usable && s.exclusive == 0 && s.room() >= memory)
               : (s.is_free() && s.cap >= memory)) {
      ++c;
    }
  }
  return c;
}

unsigned ClusterState::eligible(unsigned node, const Need& need) const {
  if (need.allowed != nullptr && !need.allowed->contains(node)) return 0;
  return scan_count(node, Phase::kAll, need.memory, need.shared);
}

}  // namespace cardiac::sched::detail
