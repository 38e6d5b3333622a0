// SPDX-License-Identifier: Apache-2.0
// Whole free nodes over a reservation's timeline, counted beside the state instead of
// releasing running jobs on it.
#include <algorithm>

#include "sched/state.h"

namespace cardiac::sched::detail {

bool ClusterState::takes_whole_nodes(const Need& need) const {
  // Then find_multi has one node count to try, max_nodes, and on each node every GPU of a
  // node of the most GPUs; memory 0 keeps every memory class and no node to scan.
  return !need.shared && need.memory == 0 && need.gpus > 1 && need.max_nodes > 1 &&
         need.max_nodes <= nodes_.size() && need.gpus / need.max_nodes == max_c_ &&
         need.gpus % need.max_nodes == 0;
}

WholeNodes::WholeNodes(const ClusterState& state, const Need& need)
    : s_(state), need_(need), touched_(state.whole_touched_), became_(state.whole_became_) {
  touched_.clear();
  became_.clear();
  if (s_.freed_.size() != s_.nodes_.size()) {
    s_.freed_.assign(s_.nodes_.size(), 0);
    s_.freed_ok_.assign(s_.nodes_.size(), 0);
  }
  const unsigned ncls = s_.classes_for(need.memory);
  for (unsigned k = 0; k < ncls; ++k) {
    for (Phase p : {Phase::kOk, Phase::kAll}) {
      const NodeSet& b = s_.bucket(p, k, s_.max_c_);
      whole_[p == Phase::kOk ? 0 : 1] +=
          need.allowed == nullptr ? b.size() : b.count_and(*need.allowed);
    }
  }
}

WholeNodes::~WholeNodes() {
  for (unsigned n : touched_) {
    s_.freed_[n] = 0;
    s_.freed_ok_[n] = 0;
  }
}

bool WholeNodes::release(const Alloc& a) {
  const unsigned c = s_.max_c_;
  const std::vector<unsigned>& gs = a.gpus;
  // Node by node, as allocations come: one count update per run of a node's GPUs.
  for (std::size_t i = 0; i < gs.size();) {
    const unsigned n = s_.node_of_[gs[i]];
    unsigned all = 0;
    unsigned ok = 0;
    for (; i < gs.size() && s_.node_of_[gs[i]] == n; ++i) {
      const GpuSlot& s = s_.gpus_[gs[i]];
      // The job is the GPU's only holder, so its end frees the GPU (when usable).
      if ((a.shared ? s.shared_jobs != 1 || s.exclusive != 0
                    : s.exclusive != 1 || s.shared_jobs != 0)) {
        return false;
      }
      all += s.usable ? 1 : 0;
      ok += s.usable && !s.degraded ? 1 : 0;
    }
    if (all == 0 || (need_.allowed != nullptr && !need_.allowed->contains(n))) continue;
    const NodeSlot& node = s_.nodes_[n];
    if (s_.freed_[n] == 0) touched_.push_back(n);
    const unsigned was = node.free + s_.freed_[n];
    const unsigned was_ok = node.free_ok + s_.freed_ok_[n];
    s_.freed_[n] = static_cast<std::uint16_t>(s_.freed_[n] + all);
    s_.freed_ok_[n] = static_cast<std::uint16_t>(s_.freed_ok_[n] + ok);
    if (was < c && was + all >= c) {
      ++whole_[1];
      became_.push_back(n);
    }
    if (was_ok < c && was_ok + ok >= c) ++whole_[0];
  }
  return true;
}

Alloc WholeNodes::pick(Phase p, unsigned k) const {
  const unsigned c = s_.max_c_;
  // As pick_nodes takes them: the first k of the level with every GPU free, by index.
  std::vector<unsigned> nodes;
  nodes.reserve(k + became_.size());
  const unsigned ncls = s_.classes_for(need_.memory);
  for (unsigned cls = 0; cls < ncls; ++cls) {
    const NodeSet& b = s_.bucket(p, cls, c);
    auto next = [&](unsigned from) {
      return need_.allowed == nullptr ? b.next(from) : b.next_and(*need_.allowed, from);
    };
    unsigned got = 0;
    for (unsigned n = next(0); n != NodeSet::kNone && got < k; n = next(n + 1), ++got) {
      nodes.push_back(n);
    }
  }
  if (ncls > 1) std::sort(nodes.begin(), nodes.end());  // one class's come in order
  // Not whole now, so in no bucket of that level yet.
  const auto now_whole = static_cast<std::ptrdiff_t>(nodes.size());
  for (unsigned n : became_) {
    if (p == Phase::kAll || s_.nodes_[n].free_ok + s_.freed_ok_[n] == c) nodes.push_back(n);
  }
  std::sort(nodes.begin() + now_whole, nodes.end());
  std::inplace_merge(nodes.begin(), nodes.begin() + now_whole, nodes.end());
  nodes.resize(std::min<std::size_t>(nodes.size(), k));
  Alloc a{.gpus = {}, .shared = false, .memory = need_.memory};
  a.gpus.reserve(static_cast<std::size_t>(k) * c);
  for (unsigned n : nodes) {
    const NodeSlot& node = s_.nodes_[n];
    for (unsigned g = node.begin; g < node.begin + node.count; ++g) a.gpus.push_back(g);
  }
  return a;
}

}  // namespace cardiac::sched::detail
