// SPDX-License-Identifier: Apache-2.0
// Session: the cluster, its placement state and capacity kept in step across passes.
#include "sched/session.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "sched/pass.h"

namespace cardiac::sched {

struct Session::Impl {
  explicit Impl(std::vector<Node> nodes)
      : cluster{.nodes = std::move(nodes), .running = {}}, state(cluster), capacity(cluster) {}

  Cluster cluster;
  detail::ClusterState state;
  detail::Capacity capacity;
  // Running job → index in cluster.running. Small non-negative ids (the simulator's trace
  // indices) in a vector, a hash lookup per start and end was a twentieth of a simulated year;
  // any other id in a map.
  class Index {
   public:
    [[nodiscard]] std::optional<std::size_t> find(JobId id) const {
      if (dense(id)) {
        const auto u = static_cast<std::size_t>(id);
        if (u < slots_.size() && slots_[u] != 0) return slots_[u] - 1;
        return std::nullopt;
      }
      auto it = sparse_.find(id);
      return it == sparse_.end() ? std::nullopt : std::optional<std::size_t>(it->second);
    }
    void set(JobId id, std::size_t i) {
      if (dense(id)) {
        const auto u = static_cast<std::size_t>(id);
        if (u >= slots_.size()) slots_.resize(std::max(u + 1, slots_.size() * 2), 0);
        slots_[u] = i + 1;
        return;
      }
      sparse_[id] = i;
    }
    void erase(JobId id) {
      if (dense(id)) {
        if (static_cast<std::size_t>(id) < slots_.size()) slots_[static_cast<std::size_t>(id)] = 0;
        return;
      }
      sparse_.erase(id);
    }

   private:
    static bool dense(JobId id) { return id >= 0 && id < kDense; }
    static constexpr JobId kDense = JobId{1} << 24;
    std::vector<std::size_t> slots_;  // index + 1; 0: not running
    std::unordered_map<JobId, std::size_t> sparse_;
  };
  Index at;
  bool start_placements = true;

  // The jobs a pass started become running jobs.
  void adopt_starts(detail::OrderedPass& pass, TimeNs now) {
    for (std::size_t i = 0; i < pass.started.size(); ++i) {
      const Job& j = *pass.started[i];
      Running r{.id = j.id,
                .user = j.user,
                .account = j.account,
                .placement = {},
                .shared = j.shared,
                .gpu_memory = j.gpu_memory,
                .start_time = now,
                .time_limit = j.time_limit};
      if (start_placements) r.placement = pass.result.starts[i].placement;
      // The pass applied the allocation already; the state only needs to know it is running.
      pass.allocs[i].end = j.time_limit > 0 ? now + j.time_limit : detail::kNoEnd;
      state.adopt(std::move(pass.allocs[i]));
      at.set(j.id, cluster.running.size());
      cluster.running.push_back(std::move(r));
    }
  }
};

Session::Session(std::vector<Node> nodes) : impl_(std::make_unique<Impl>(std::move(nodes))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

ScheduleResult Session::pass(const std::vector<Job>& pending, const Usage& usage,
                             const PolicyConfig& policy, TimeNs now,
                             const std::vector<JobId>& finished_ok) {
  Impl& m = *impl_;
  detail::OrderedPass p = detail::run_pass(m.cluster, m.state, m.capacity, pending, usage, policy,
                                           now, finished_ok, m.start_placements);
  m.adopt_starts(p, now);
  return std::move(p.result);
}

ScheduleResult Session::pass_ordered(OrderedPending& pending, const PolicyConfig& policy,
                                     TimeNs now, const std::vector<JobId>& finished_ok) {
  Impl& m = *impl_;
  detail::OrderedPass p = detail::run_ordered(m.cluster, m.state, m.capacity, pending, policy, now,
                                              finished_ok, true, m.start_placements);
  m.adopt_starts(p, now);
  return std::move(p.result);
}

void Session::set_start_placements(bool on) {
  impl_->start_placements = on;
}

void Session::end(JobId id) {
  Impl& m = *impl_;
  const std::optional<std::size_t> found = m.at.find(id);
  if (!found) return;
  const std::size_t i = *found;
  m.at.erase(id);
  m.state.end_running(i);
  if (i + 1 != m.cluster.running.size()) {
    m.cluster.running[i] = std::move(m.cluster.running.back());
    m.at.set(m.cluster.running[i].id, i);
  }
  m.cluster.running.pop_back();
}

void Session::set_health(unsigned node, unsigned gpu, GpuHealth health) {
  Impl& m = *impl_;
  if (node >= m.cluster.nodes.size() || gpu >= m.cluster.nodes[node].gpus.size()) return;
  Gpu& g = m.cluster.nodes[node].gpus[gpu];
  const bool was_fenced = g.health == GpuHealth::kFenced;
  g.health = health;
  const unsigned flat = m.state.nodes()[node].begin + gpu;
  m.state.set_usable(flat, health != GpuHealth::kFenced && !g.busy_outside,
                     health == GpuHealth::kDegraded);
  if (was_fenced != (health == GpuHealth::kFenced)) m.capacity.fence_changed(node, !was_fenced);
}

const Cluster& Session::cluster() const {
  return impl_->cluster;
}

bool Session::running(JobId id) const {
  return impl_->at.find(id).has_value();
}

const std::vector<unsigned>& Session::running_gpus(std::size_t i) const {
  return impl_->state.running()[i].gpus;
}

}  // namespace cardiac::sched
