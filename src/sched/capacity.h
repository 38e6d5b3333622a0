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
  };
  const Counts& counts(std::uint64_t memory);

  const Cluster& cluster_;
  std::map<std::uint64_t, Counts> cache_;  // node-based: pointers into it stay valid
  const Counts* any_ = nullptr;            // cache_[0]
  std::uint64_t max_memory_ = 0;
  bool scanned_memory_ = false;
};

}  // namespace cardiac::sched::detail
