// SPDX-License-Identifier: Apache-2.0
// Static feasibility: a request larger than any node, the cluster or any GPU's memory.
#include "sched/capacity.h"

#include <algorithm>

#include "core/format.h"
#include "core/units.h"
#include "sched/reasons.h"

namespace cardiac::sched {
namespace detail {
const Capacity::Counts& Capacity::counts(std::uint64_t memory) {
  auto it = cache_.find(memory);
  if (it != cache_.end()) return it->second;
  Counts c;
  for (const Node& n : cluster_.nodes) {
    unsigned k = 0;
    for (const Gpu& g : n.gpus) k += g.memory_bytes >= memory ? 1 : 0;
    c.per_node.push_back(k);
  }
  std::sort(c.per_node.begin(), c.per_node.end(), std::greater<>());
  c.prefix.assign(c.per_node.size() + 1, 0);
  for (std::size_t i = 0; i < c.per_node.size(); ++i) {
    c.prefix[i + 1] = c.prefix[i] + c.per_node[i];
  }
  return cache_.emplace(memory, std::move(c)).first->second;
}

std::string Capacity::impossible(const Job& job) {
  if (job.gpus == 0) return {};
  if (any_ == nullptr) any_ = &counts(0);
  // The common request, answered without a lookup: it runs once per pending job and pass.
  if (job.gpu_memory == 0 && job.nodes <= 1 && !any_->per_node.empty() &&
      job.gpus <= any_->per_node.front()) {
    return {};
  }
  if (any_->prefix.back() == 0) return "the cluster has no GPUs";
  if (job.gpu_memory > 0) {
    if (!scanned_memory_) {
      for (const Node& n : cluster_.nodes) {
        for (const Gpu& g : n.gpus) max_memory_ = std::max(max_memory_, g.memory_bytes);
      }
      scanned_memory_ = true;
    }
    if (job.gpu_memory > max_memory_) {
      return fmt::format("{} per GPU requested, the largest GPU has {}",
                         format_bytes(job.gpu_memory), format_bytes(max_memory_));
    }
  }
  const Counts& c = counts(job.gpu_memory);
  const std::string with =
      job.gpu_memory > 0 ? fmt::format(" with {}", format_bytes(job.gpu_memory)) : "";
  const unsigned max_nodes = std::max(1u, job.nodes);
  if (max_nodes == 1) {
    if (job.gpus <= c.per_node.front()) return {};
    if (cluster_.nodes.size() == 1) {
      return fmt::format("{}{} requested, the machine has {}", gpus_text(job.gpus), with,
                         c.per_node.front());
    }
    return fmt::format("{}{} requested, the largest node has {}", gpus_text(job.gpus), with,
                       c.per_node.front());
  }
  if (job.gpus > c.prefix.back()) {
    return fmt::format("{}{} requested, the cluster has {}", gpus_text(job.gpus), with,
                       c.prefix.back());
  }
  const std::size_t k = std::min<std::size_t>({max_nodes, c.per_node.size(), job.gpus});
  // Even spreading: the k-th largest node must take its share too.
  for (std::size_t n = 1; n <= k; ++n) {
    const unsigned q = job.gpus / static_cast<unsigned>(n);
    const unsigned r = job.gpus % static_cast<unsigned>(n);
    const bool ok = c.per_node[n - 1] >= q && (r == 0 || c.per_node[r - 1] >= q + 1);
    if (ok) return {};
  }
  return fmt::format("{}{} on at most {} nodes requested, the {} largest nodes hold {}",
                     gpus_text(job.gpus), with, max_nodes, k, c.prefix[k]);
}

}  // namespace detail

Status feasible(const Cluster& cluster, const Job& job) {
  detail::Capacity cap(cluster);
  std::string why = cap.impossible(job);
  if (why.empty()) return {};
  return fail(Error::invalid(std::move(why), fmt::format("job {}", job.id)));
}

}  // namespace cardiac::sched
