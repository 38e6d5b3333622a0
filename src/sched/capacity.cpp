// SPDX-License-Identifier: Apache-2.0
// Static feasibility: a request larger than any node, the cluster or any GPU's memory, or for
// a GPU model the cluster lacks.
#include "sched/capacity.h"

#include <algorithm>
#include <numeric>

#include "core/format.h"
#include "core/units.h"
#include "sched/reasons.h"

namespace cardiac::sched {
namespace detail {
namespace {

// GPU counts per node take few distinct values: a counting sort is linear, and the health
// counts are redone after every fence and clear (every failure and repair in the simulator).
void sort_descending(std::vector<unsigned>& v) {
  constexpr unsigned kMaxCounted = 4096;
  const unsigned most = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  if (most > kMaxCounted) {
    std::sort(v.begin(), v.end(), std::greater<>());
    return;
  }
  std::vector<std::size_t> count(most + 1, 0);
  for (unsigned x : v) ++count[x];
  std::size_t at = 0;
  for (unsigned x = most + 1; x-- > 0;) {
    std::fill_n(v.begin() + static_cast<std::ptrdiff_t>(at), count[x], x);
    at += count[x];
  }
}

// Spread over fewer nodes than this, `gpus` put more on a node than the largest holds: the
// first node count the even-spreading checks can accept (a 4,096-GPU job on nodes of 8 starts
// at 512 instead of trying every count below on every pass).
std::size_t fewest_nodes(unsigned gpus, unsigned largest) {
  return std::size_t{gpus} / (std::size_t{largest} + 1) + 1;
}

}  // namespace

const Capacity::Counts& Capacity::counts(std::uint64_t memory,
                                         const std::vector<std::string>& models, bool healthy) {
  auto& cache = healthy ? (models.empty() ? healthy_any_ : healthy_by_models_[models])
                        : (models.empty() ? any_model_ : by_models_[models]);
  auto it = cache.find(memory);
  if (it != cache.end()) return it->second;
  Counts c;
  for (const Node& n : cluster_.nodes) {
    const bool of_model =
        models.empty() || std::find(models.begin(), models.end(), n.model) != models.end();
    unsigned k = 0;
    for (const Gpu& g : n.gpus) {
      if (!of_model) break;
      if (healthy && g.health == GpuHealth::kFenced) continue;
      k += g.memory_bytes >= memory ? 1 : 0;
      c.max_memory = std::max(c.max_memory, g.memory_bytes);
    }
    c.per_node.push_back(k);
  }
  sort_descending(c.per_node);
  c.prefix.assign(c.per_node.size() + 1, 0);
  for (std::size_t i = 0; i < c.per_node.size(); ++i) {
    c.prefix[i + 1] = c.prefix[i] + c.per_node[i];
  }
  return cache.emplace(memory, std::move(c)).first->second;
}

std::string Capacity::impossible(const Job& job) {
  if (job.gpus == 0) return {};
  if (any_ == nullptr) any_ = &counts(0, {});
  // The common request, answered without a lookup: it runs once per pending job and pass.
  if (job.models.empty() && job.gpu_memory == 0 && job.nodes <= 1 && !any_->per_node.empty() &&
      job.gpus <= any_->per_node.front()) {
    return {};
  }
  if (any_->prefix.back() == 0) return "the cluster has no GPUs";
  // A model list names its nodes "such nodes" and leads with "needs": "needs 8 GPUs of model
  // A10, the largest such node has 4".
  const bool any_model = job.models.empty();
  const Counts& all = any_model ? *any_ : counts(0, job.models);
  if (all.prefix.back() == 0) return "no node" + models_text(job.models);
  auto say = [&](const std::string& subject, const std::string& have) {
    return any_model ? fmt::format("{} requested, {}", subject, have)
                     : fmt::format("needs {}, {}", subject, have);
  };
  const char* such = any_model ? "" : " such";
  if (job.gpu_memory > all.max_memory) {
    return say(fmt::format("{} per GPU{}", format_bytes(job.gpu_memory), models_text(job.models)),
               fmt::format("the largest{} GPU has {}", such, format_bytes(all.max_memory)));
  }
  const Counts& c = job.gpu_memory == 0 ? all : counts(job.gpu_memory, job.models);
  // Only a refusal pays for the text: multi-node requests get this far on every pass.
  auto what = [&] {
    return fmt::format(
        "{}{}{}", gpus_text(job.gpus), models_text(job.models),
        job.gpu_memory > 0 ? fmt::format(" with {}", format_bytes(job.gpu_memory)) : "");
  };
  const unsigned max_nodes = std::max(1u, job.nodes);
  if (max_nodes == 1) {
    if (job.gpus <= c.per_node.front()) return {};
    if (cluster_.nodes.size() == 1) {
      return say(what(), fmt::format("the machine has {}", c.per_node.front()));
    }
    return say(what(), fmt::format("the largest{} node has {}", such, c.per_node.front()));
  }
  if (job.gpus > c.prefix.back()) {
    return say(what(), any_model ? fmt::format("the cluster has {}", c.prefix.back())
                                 : fmt::format("all such nodes hold {}", c.prefix.back()));
  }
  const std::size_t k = std::min<std::size_t>({max_nodes, c.per_node.size(), job.gpus});
  // Even spreading: the k-th largest node must take its share too.
  for (std::size_t n = fewest_nodes(job.gpus, c.per_node.front()); n <= k; ++n) {
    const unsigned q = job.gpus / static_cast<unsigned>(n);
    const unsigned r = job.gpus % static_cast<unsigned>(n);
    const bool ok = c.per_node[n - 1] >= q && (r == 0 || c.per_node[r - 1] >= q + 1);
    if (ok) return {};
  }
  return say(fmt::format("{} on at most {} nodes", what(), max_nodes),
             fmt::format("the {} largest{} nodes hold {}", k, such, c.prefix[k]));
}

void Capacity::fence_changed(unsigned node, bool fenced) {
  if (healthy0_ == nullptr) return;  // built afresh when next asked for
  healthy_by_models_.clear();
  for (auto it = healthy_any_.begin(); it != healthy_any_.end();) {
    it = it->first == 0 ? std::next(it) : healthy_any_.erase(it);
  }
  // per_node is sorted largest first: the node's count c becomes c - 1 at the last entry
  // holding c, or c + 1 at the first, and the order holds.
  std::vector<unsigned>& per = healthy_any_.begin()->second.per_node;
  unsigned& c = healthy_of_node_[node];
  if (fenced) {
    const auto at = std::upper_bound(per.begin(), per.end(), c, std::greater<>());
    --*std::prev(at);
    --c;
  } else {
    const auto at = std::lower_bound(per.begin(), per.end(), c, std::greater<>());
    ++*at;
    ++c;
  }
}

std::string Capacity::unhealthy(const Job& job) {
  if (job.gpus == 0) return {};
  if (healthy0_ == nullptr) {
    healthy_any_.erase(0);
    healthy0_ = &counts(0, {}, true);
    healthy_of_node_.assign(cluster_.nodes.size(), 0);
    for (std::size_t n = 0; n < cluster_.nodes.size(); ++n) {
      for (const Gpu& g : cluster_.nodes[n].gpus) {
        healthy_of_node_[n] += g.health == GpuHealth::kFenced ? 0 : 1;
      }
    }
  }
  const bool plain = job.models.empty() && job.gpu_memory == 0;
  // The common request, answered without a lookup: it runs for every job that does not fit.
  if (plain && job.nodes <= 1 && !healthy0_->per_node.empty() &&
      job.gpus <= healthy0_->per_node.front()) {
    return {};
  }
  const Counts& c = plain ? *healthy0_ : counts(job.gpu_memory, job.models, true);
  const unsigned max_nodes = std::max(1u, job.nodes);
  const unsigned largest = c.per_node.empty() ? 0 : c.per_node.front();
  if (max_nodes == 1 && job.gpus <= largest) return {};
  if (max_nodes > 1) {
    const std::size_t k = std::min<std::size_t>({max_nodes, c.per_node.size(), job.gpus});
    for (std::size_t n = fewest_nodes(job.gpus, largest); n <= k; ++n) {
      const unsigned q = job.gpus / static_cast<unsigned>(n);
      const unsigned r = job.gpus % static_cast<unsigned>(n);
      if (c.per_node[n - 1] >= q && (r == 0 || c.per_node[r - 1] >= q + 1)) return {};
    }
  }
  const std::string what =
      fmt::format("{}{}{}{}", gpus_text(job.gpus), models_text(job.models),
                  job.gpu_memory > 0 ? fmt::format(" with {}", format_bytes(job.gpu_memory)) : "",
                  max_nodes > 1 ? fmt::format(" on at most {} nodes", max_nodes) : "");
  if (cluster_.nodes.size() == 1) return fmt::format("needs {}, {} healthy", what, largest);
  if (max_nodes == 1) {
    return fmt::format("needs {}, the largest node has {} healthy", what, largest);
  }
  const std::size_t k = std::min<std::size_t>(max_nodes, c.per_node.size());
  const unsigned top =
      std::accumulate(c.per_node.begin(), c.per_node.begin() + static_cast<std::ptrdiff_t>(k), 0u);
  return fmt::format("needs {}, the {} largest nodes have {} healthy", what, k, top);
}

}  // namespace detail

Status feasible(const Cluster& cluster, const Job& job) {
  detail::Capacity cap(cluster);
  std::string why = cap.impossible(job);
  if (why.empty()) return {};
  return fail(Error::invalid(std::move(why), fmt::format("job {}", job.id)));
}

Status fits_healthy(const Cluster& cluster, const Job& job) {
  detail::Capacity cap(cluster);
  std::string why = cap.unhealthy(job);
  if (why.empty()) return {};
  return fail(Error::invalid(std::move(why), fmt::format("job {}", job.id)));
}

}  // namespace cardiac::sched
