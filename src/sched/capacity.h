// SPDX-License-Identifier: Apache-2.0
// What the cluster could ever hold, ignoring health and what runs now; for feasible() and for
// skipping impossible jobs in a pass without letting them block the queue.
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

 private:
  struct Counts {
    std::vector<unsigned> per_node;  // GPUs with enough memory, per node, largest first
    std::vector<unsigned> prefix;    // prefix[k]: the k largest nodes together
    std::uint64_t max_memory = 0;    // the largest GPU on the nodes counted
  };
  // Only nodes of `models` count (every node when it is empty).
  const Counts& counts(std::uint64_t memory, const std::vector<std::string>& models);

  const Cluster& cluster_;
  // Per model list, per memory; node-based maps, so pointers into them stay valid.
  std::map<std::uint64_t, Counts> any_model_;
  std::map<std::vector<std::string>, std::map<std::uint64_t, Counts>> by_models_;
  const Counts* any_ = nullptr;  // any_model_[0]
};

}  // namespace cardiac::sched::detail
