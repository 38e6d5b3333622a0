// SPDX-License-Identifier: Apache-2.0
// Why a pending job waits, in words for `cardiac why` and `cardiac queue`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sched/sched.h"
#include "sched/state.h"

namespace cardiac::sched::detail {

// Describes what is missing for a job in the cluster as it stands after the pass: "needs 4 free
// GPUs, 2 free (GPUs 3, 5 fenced)". Per-node counts are computed once per kind of request.
class Explainer {
 public:
  Explainer(const Cluster& cluster, const ClusterState& state);

  std::string shortfall(const Job& job);

 private:
  struct Counts {
    std::vector<unsigned> per_node;  // largest first
    std::vector<unsigned> prefix;
  };
  const Counts& counts(const Need& need);

  const Cluster& cluster_;
  const ClusterState& state_;
  std::string unusable_;  // " (GPUs 3, 5 fenced)" or ""
  // Need::allowed is one set per distinct model list, so the pointer names the list.
  std::map<std::tuple<std::uint64_t, bool, const NodeSet*>, Counts> cache_;
};

std::string gpus_text(unsigned long long n);  // "1 GPU", "3 GPUs"

// " of model A10", " of model V100M16 or V100M32", "" for no list.
std::string models_text(const std::vector<std::string>& models);

// "2026-12-02T16:35:10.123Z (in 1h 02m)"
std::string when_text(TimeNs t, TimeNs now);

}  // namespace cardiac::sched::detail
