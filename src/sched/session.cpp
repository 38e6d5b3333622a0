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
};

Session::Session(std::vector<Node> nodes) : impl_(std::make_unique<Impl>(std::move(nodes))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

ScheduleResult Session::pass(const std::vector<Job>& pending, const Usage& usage,
                             const PolicyConfig& policy, TimeNs now,
                             const std::vector<JobId>& finished_ok) {
  Impl& m = *impl_;
  ScheduleResult res =
      detail::run_pass(m.cluster, m.state, m.capacity, pending, usage, policy, now, finished_ok);
  if (res.starts.empty()) return res;
  std::unordered_map<JobId, const Job*> by_id;
  by_id.reserve(res.starts.size());
  for (const Start& s : res.starts) by_id.emplace(s.job, nullptr);
  for (const Job& j : pending) {
    if (auto it = by_id.find(j.id); it != by_id.end()) it->second = &j;
  }
  for (const Start& s : res.starts) {
    const Job& j = *by_id.at(s.job);
    Running r{.id = j.id,
              .user = j.user,
              .account = j.account,
              .placement = s.placement,
              .shared = j.shared,
              .gpu_memory = j.gpu_memory,
              .start_time = now,
              .time_limit = j.time_limit};
    // run_pass applied the allocation already; the state only needs to know it is running.
    m.state.adopt(m.state.alloc_of(r));
    m.at[j.id] = m.cluster.running.size();
    m.cluster.running.push_back(std::move(r));
  }
  return res;
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
  g.health = health;
  const unsigned flat = m.state.nodes()[node].begin + gpu;
  m.state.set_usable(flat, health != GpuHealth::kFenced && !g.busy_outside,
                     health == GpuHealth::kDegraded);
  m.capacity.forget_health();
}

const Cluster& Session::cluster() const {
  return impl_->cluster;
}

bool Session::running(JobId id) const {
  return impl_->at.contains(id);
}

}  // namespace cardiac::sched
