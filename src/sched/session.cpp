// SPDX-License-Identifier: Apache-2.0
// Session: the cluster, its placement state and capacity kept in step across passes.
#include "sched/session.h"

#include <unordered_map>

#include "sched/pass.h"

namespace cardiac::sched {

struct Session::Impl {
  explicit Impl(std::vector<Node> nodes)
      : cluster{.nodes = std::move(nodes), .running = {}}, state(cluster), capacity(cluster) {}

  Cluster cluster;
  detail::ClusterState state;
  detail::Capacity capacity;
  std::unordered_map<JobId, std::size_t> at;  // running job → index in cluster.running

  // The jobs a pass started become running jobs.
  void adopt_starts(detail::OrderedPass& pass, TimeNs now) {
    for (std::size_t i = 0; i < pass.started.size(); ++i) {
      const Job& j = *pass.started[i];
      Running r{.id = j.id,
                .user = j.user,
                .account = j.account,
                .placement = pass.result.starts[i].placement,
                .shared = j.shared,
                .gpu_memory = j.gpu_memory,
                .start_time = now,
                .time_limit = j.time_limit};
      // The pass applied the allocation already; the state only needs to know it is running.
      state.adopt(std::move(pass.allocs[i]));
      at[j.id] = cluster.running.size();
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
  detail::OrderedPass p =
      detail::run_pass(m.cluster, m.state, m.capacity, pending, usage, policy, now, finished_ok);
  m.adopt_starts(p, now);
  return std::move(p.result);
}

ScheduleResult Session::pass_ordered(OrderedPending& pending, const PolicyConfig& policy,
                                     TimeNs now, const std::vector<JobId>& finished_ok) {
  Impl& m = *impl_;
  detail::OrderedPass p =
      detail::run_ordered(m.cluster, m.state, m.capacity, pending, policy, now, finished_ok);
  m.adopt_starts(p, now);
  return std::move(p.result);
}

void Session::end(JobId id) {
  Impl& m = *impl_;
  auto it = m.at.find(id);
  if (it == m.at.end()) return;
  const std::size_t i = it->second;
  m.at.erase(it);
  m.state.end_running(i);
  if (i + 1 != m.cluster.running.size()) {
    m.cluster.running[i] = std::move(m.cluster.running.back());
    m.at[m.cluster.running[i].id] = i;
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
  return impl_->at.contains(id);
}

}  // namespace cardiac::sched
