// SPDX-License-Identifier: Apache-2.0
// What the cluster could ever hold, ignoring health and what runs now; for feasible() and for
// skipping impossible jobs in a pass without letting them block the queue. Also what its
// healthy (not fenced) GPUs could hold, for skipping jobs too large for them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched::detail {

class Capacity {
 public:
  explicit Capacity(const Cluster& cluster) : cluster_(cluster) {}

  // "" when the job could run on an idle, healthy cluster; else what is impossible.
  std::string impossible(const Job& job);
  // "" when the job could run on the GPUs that are not fenced, were nothing running; else
  // "needs 8 GPUs, 7 healthy". Health changes between passes: call forget_health() first.
  std::string unhealthy(const Job& job);
  void forget_health() {
    healthy0_ = nullptr;
    healthy_any_.clear();
    healthy_by_models_.clear();
  }
  // One GPU of `node` was fenced (`fenced`) or cleared, the cluster already changed: the
  // counts of every GPU model and memory are forgotten, the plain request's are updated in
  // place (a failure or a repair in the simulator costs a lookup, not a walk of the cluster).
  void fence_changed(unsigned node, bool fenced);

 private:
  struct Counts {
    std::vector<unsigned> per_node;  // GPUs with enough memory, per node, largest first
    std::vector<unsigned> prefix;    // prefix[k]: the k largest nodes together
    std::uint64_t max_memory = 0;    // the largest GPU on the nodes counted
  };
  // Only nodes of `models` count (every node when it is empty).
  const Counts& counts(std::uint64_t memory, const std::vector<std::string>& models,
                       bool healthy = false);

  const Cluster& cluster_;
  // Per model list, per memory; node-based maps, so pointers into them stay valid.
  std::map<std::uint64_t, Counts> any_model_;
  std::map<std::vector<std::string>, std::map<std::uint64_t, Counts>> by_models_;
  const Counts* any_ = nullptr;  // any_model_[0]
  // The same for the GPUs that are not fenced.
  std::map<std::uint64_t, Counts> healthy_any_;
  std::map<std::vector<std::string>, std::map<std::uint64_t, Counts>> healthy_by_models_;
  const Counts* healthy0_ = nullptr;  // healthy_any_[0]
  // Per node, the count in healthy_any_[0] (its per_node is sorted, so which entry stands for
  // which node is not kept): filled with it. healthy_any_[0].prefix is not kept up to date.
  std::vector<unsigned> healthy_of_node_;
};

}  // namespace cardiac::sched::detail
