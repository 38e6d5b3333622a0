// SPDX-License-Identifier: Apache-2.0
// The engine's bookkeeping: GPU ownership, checkpoint timelines of a run, accounts, summary.
#include "sim/engine_detail.h"

#include <algorithm>
#include <numeric>

namespace cardiac::sim::detail {

Gpus::Gpus(const sched::Cluster& cluster) {
  for (unsigned n = 0; n < cluster.nodes.size(); ++n) {
    begin.push_back(static_cast<unsigned>(node_of.size()));
    for (unsigned p = 0; p < cluster.nodes[n].gpus.size(); ++p) {
      node_of.push_back(n);
      pos_of.push_back(p);
    }
  }
  state.resize(node_of.size());
  owner.assign(node_of.size(), kNoJob);
  idle = static_cast<unsigned>(node_of.size());
}

std::vector<unsigned> Gpus::of_node(unsigned node) const {
  std::vector<unsigned> out;
  const unsigned end =
      node + 1 < begin.size() ? begin[node + 1] : static_cast<unsigned>(node_of.size());
  for (unsigned g = begin[node]; g < end; ++g) out.push_back(g);
  return out;
}

std::vector<unsigned> Gpus::hit_by(const FailureEvent& f, unsigned nodes_per_domain) const {
  if (f.node >= begin.size()) return {};
  if (f.scope == Scope::kDomain) {
    const unsigned per = std::max(1u, nodes_per_domain);
    const unsigned first = f.node / per * per;
    const unsigned last = std::min(static_cast<unsigned>(begin.size()), first + per);
    std::vector<unsigned> out;
    for (unsigned n = first; n < last; ++n) {
      auto g = of_node(n);
      out.insert(out.end(), g.begin(), g.end());
    }
    return out;
  }
  std::vector<unsigned> node = of_node(f.node);
  // The failure process draws a GPU as if every node had the average count: on a smaller
  // node it stands for one of that node's GPUs.
  if (f.gpu >= 0 && !node.empty()) return {node[static_cast<std::size_t>(f.gpu) % node.size()]};
  return node;
}

std::vector<std::uint32_t> Gpus::jobs_on(const std::vector<unsigned>& gpus) const {
  std::vector<std::uint32_t> out;
  for (unsigned g : gpus) {
    if (owner[g] == kNoJob) continue;
    out.push_back(owner[g]);
    if (auto it = more.find(g); it != more.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Gpus::hold(unsigned g, std::uint32_t job) {
  if (owner[g] == kNoJob) {
    if (!state[g].down) --idle;
    owner[g] = job;
    return;
  }
  more[g].push_back(job);
}

void Gpus::drop(unsigned g, std::uint32_t job) {
  if (owner[g] == kNoJob) return;
  // Without shared jobs `more` stays empty: no lookup per GPU of every end.
  if (more.empty()) {
    if (owner[g] != job) return;
    owner[g] = kNoJob;
    if (!state[g].down) ++idle;
    return;
  }
  auto it = more.find(g);
  if (owner[g] == job) {
    if (it == more.end()) {
      owner[g] = kNoJob;
      if (!state[g].down) ++idle;
      return;
    }
    owner[g] = it->second.front();
    it->second.erase(it->second.begin());
  } else if (it != more.end()) {
    std::erase(it->second, job);
  } else {
    return;
  }
  if (it->second.empty()) more.erase(it);
}

void release(Gpus& gpus, JobState& s, std::uint32_t job) {
  for (unsigned g : s.gpus) gpus.drop(g, job);
  s.gpus.clear();
}

std::vector<sched::Node> build_nodes(const SimConfig& config) {
  std::vector<sched::Node> nodes;
  auto add = [&](const NodeType& t) {
    sched::Node n;
    n.name = "n" + std::to_string(nodes.size());
    n.model = t.model;
    for (unsigned i = 0; i < t.gpus_per_node; ++i) {
      n.gpus.push_back(sched::Gpu{.index = i, .memory_bytes = t.gpu_memory, .nvlink_domain = 0});
    }
    nodes.push_back(std::move(n));
  };
  for (const NodeType& t : config.cluster.types) {
    for (unsigned i = 0; i < t.count; ++i) add(t);
  }
  if (!config.cluster.types.empty()) {
    for (unsigned i = 0; i < config.cluster.spares; ++i) add(config.cluster.types.front());
  }
  return nodes;
}

Segment plan_segment(const JobState& s, const TraceJob& t, const CheckpointPolicy& ckpt) {
  const DurationNs remaining = std::max<DurationNs>(t.duration - s.saved, 0);
  DurationNs writes = 0;
  if (ckpt.write == CheckpointWrite::kBlocking && std::isfinite(s.tau_s) && s.tau_s > 0) {
    const DurationNs tau = seconds_ns(s.tau_s);
    const DurationNs n = remaining > 0 ? (remaining - 1) / tau : 0;  // none after the last piece
    writes = n * seconds_ns(ckpt.write_s);
  }
  Segment seg{.wall = s.seg_restart + remaining + writes, .timeout = false};
  if (t.time_limit > 0 && seg.wall > t.time_limit) {
    seg.wall = t.time_limit;
    seg.timeout = true;
  }
  return seg;
}

Kept progress_at(const JobState& s, const TraceJob& t, const CheckpointPolicy& ckpt, TimeNs now,
                 bool completed) {
  const DurationNs remaining = std::max<DurationNs>(t.duration - s.saved, 0);
  const DurationNs ran = std::max<DurationNs>(now - s.seg_start, 0);
  Kept k;
  k.restart = std::min(ran, s.seg_restart);
  const DurationNs elapsed = ran - k.restart;
  const bool has_tau = std::isfinite(s.tau_s) && s.tau_s > 0;
  const DurationNs tau = has_tau ? seconds_ns(s.tau_s) : kForever;
  const DurationNs write = seconds_ns(ckpt.write_s);
  if (ckpt.write == CheckpointWrite::kBlocking && has_tau) {
    const DurationNs cycle = tau + write;
    const DurationNs cycles = elapsed / cycle;
    const DurationNs in_cycle = elapsed - cycles * cycle;
    k.computed = std::min(remaining, cycles * tau + std::min(in_cycle, tau));
    k.writes = cycles * write + std::max<DurationNs>(in_cycle - tau, 0);
    k.kept = std::min(remaining, cycles * tau);
  } else {
    k.computed = std::min(remaining, elapsed);
    // An overlapped write of the state at compute time iτ is durable at iτ + δ.
    const DurationNs durable = has_tau && elapsed >= write ? (elapsed - write) / tau : 0;
    k.kept = std::min(remaining, durable * tau);
  }
  if (completed && !s.seg_timeout) k.kept = k.computed = remaining;
  return k;
}

void Accounts::charge(JobState& s, const TraceJob& t, DurationNs ran, const Kept& k,
                      DurationNs hang) {
  const double w = static_cast<double>(t.gpus) * t.gpu_share / 1e9;
  const double alloc = static_cast<double>(ran + hang) * w;
  allocated_gpu_s += alloc;
  productive_gpu_s += static_cast<double>(k.kept) * w;
  lost_work_gpu_s += static_cast<double>(k.computed - k.kept) * w;
  restart_gpu_s += static_cast<double>(k.restart) * w;
  checkpoint_gpu_s += static_cast<double>(k.writes) * w;
  hung_gpu_s += static_cast<double>(hang) * w;
  slow_pace_gpu_s += static_cast<double>(k.slowed) * w;
  if (s.after_slow) slow_restart_gpu_s += static_cast<double>(k.restart) * w;
  user_gpu_s[t.user] += alloc;
  s.attained_gpu_s += alloc;
  s.productive += k.kept;
}

void thin_series(std::vector<SeriesPoint>& series) {
  std::vector<SeriesPoint> out;
  out.reserve(series.size() / 2 + 1);
  std::uint64_t carried = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (i % 2 == 1) {
      carried += series[i].interruptions;
      continue;
    }
    SeriesPoint p = series[i];
    p.interruptions += carried;
    carried = 0;
    out.push_back(p);
  }
  if (carried > 0 && !out.empty()) out.back().interruptions += carried;
  series = std::move(out);
}

std::vector<double> max_min_fair(const std::vector<double>& demands, double total) {
  std::vector<double> out(demands.size(), 0);
  std::vector<std::size_t> idx(demands.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return demands[a] != demands[b] ? demands[a] < demands[b] : a < b;
  });
  double left = total;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    const double share = left / static_cast<double>(idx.size() - i);
    const double give = std::min(share, demands[idx[i]]);
    out[idx[i]] = give;
    left -= give;
  }
  return out;
}

Quantiles quantiles(std::vector<double> v) {
  Quantiles q;
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  q.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  const std::size_t n = v.size();
  q.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  q.p99 = v[std::max<std::size_t>(rank, 1) - 1];
  return q;
}

Summary summarize(const SimConfig& config, const std::vector<TraceJob>& trace,
                  const std::vector<JobState>& jobs, const Accounts& acc, TimeNs end) {
  Summary s;
  s.jobs = trace.size();
  s.cluster_gpus = config.cluster.gpus();
  const TimeNs first = trace.empty() ? 0 : trace.front().submit;
  s.span_s = static_cast<double>(std::max<TimeNs>(end - first, 0)) / 1e9;
  std::vector<double> wait, jct, slow, ettr;
  double productive_time = 0, wall_time = 0;
  std::map<std::string, double> demand;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceJob& t = trace[i];
    const JobState& j = jobs[i];
    demand[t.user] += static_cast<double>(t.duration) / 1e9 * t.gpus * t.gpu_share;
    if (j.first_start < 0) ++s.never_started;
    if (j.phase != Phase::kDone) {
      ++s.unfinished;
      continue;
    }
    if (j.timed_out) {
      ++s.timed_out;
      continue;
    }
    ++s.completed;
    const double w = static_cast<double>(j.first_start - t.submit) / 1e9;
    const double c = static_cast<double>(j.end - t.submit) / 1e9;
    const double d = static_cast<double>(t.duration) / 1e9;
    wait.push_back(w);
    jct.push_back(c);
    slow.push_back(c / std::max(d, 10.0));
    if (c > 0) ettr.push_back(d / c);
    unsigned cls = 1;
    while (cls < t.gpus) cls *= 2;
    SizeClass& sc = s.by_size[cls];
    sc.ettr_mean += c > 0 ? d / c : 1;  // a sum until divided below
    sc.interruptions += j.restarts;
    ++sc.jobs;
    productive_time += d;
    wall_time += c;
  }
  s.wait_s = quantiles(std::move(wait));
  s.jct_s = quantiles(std::move(jct));
  s.slowdown = quantiles(std::move(slow));
  s.ettr = wall_time > 0 ? productive_time / wall_time : 0;
  s.ettr_mean = quantiles(std::move(ettr)).mean;
  for (auto& [cls, sc] : s.by_size) sc.ettr_mean /= static_cast<double>(sc.jobs);
  s.interruptions = acc.interruptions;
  s.failures = acc.failures;
  s.interruptions_by_cause = acc.by_cause;
  s.failures_by_category = acc.by_category;
  s.allocated_gpu_h = acc.allocated_gpu_s / 3600;
  s.productive_gpu_h = acc.productive_gpu_s / 3600;
  s.lost_gpu_h = s.allocated_gpu_h - s.productive_gpu_h;
  s.lost_work_gpu_h = acc.lost_work_gpu_s / 3600;
  s.restart_gpu_h = acc.restart_gpu_s / 3600;
  s.hung_gpu_h = acc.hung_gpu_s / 3600;
  s.checkpoint_gpu_h = acc.checkpoint_gpu_s / 3600;
  s.fail_slow = config.failures.slow.on();
  s.stragglers = acc.stragglers;
  s.stragglers_detected = acc.stragglers_detected;
  s.slow_pace_gpu_h = acc.slow_pace_gpu_s / 3600;
  s.slow_lost_work_gpu_h = acc.slow_lost_work_gpu_s / 3600;
  s.slow_restart_gpu_h = acc.slow_restart_gpu_s / 3600;
  s.slow_gpu_h = s.slow_pace_gpu_h + s.slow_lost_work_gpu_h + s.slow_restart_gpu_h;
  s.failure_lost_gpu_h = std::max(0.0, s.lost_gpu_h - s.checkpoint_gpu_h - s.slow_gpu_h);
  s.goodput = acc.allocated_gpu_s > 0 ? acc.productive_gpu_s / acc.allocated_gpu_s : 0;
  const double capacity = s.cluster_gpus * s.span_s;
  s.utilization_allocated = capacity > 0 ? acc.allocated_gpu_s / capacity : 0;
  s.utilization_productive = capacity > 0 ? acc.productive_gpu_s / capacity : 0;

  std::vector<std::string> names;
  std::vector<double> demands;
  double delivered = 0;
  for (const auto& [user, d] : demand) {
    names.push_back(user);
    demands.push_back(d / 3600);
    auto it = acc.user_gpu_s.find(user);
    delivered += it == acc.user_gpu_s.end() ? 0 : it->second / 3600;
  }
  const std::vector<double> entitled = max_min_fair(demands, delivered);
  double sum = 0, sum2 = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    UserFairness& u = s.users[names[i]];
    u.demand_gpu_h = demands[i];
    auto it = acc.user_gpu_s.find(names[i]);
    u.received_gpu_h = it == acc.user_gpu_s.end() ? 0 : it->second / 3600;
    u.entitled_gpu_h = entitled[i];
    if (u.entitled_gpu_h > 0) {
      const double x = u.received_gpu_h / u.entitled_gpu_h;
      sum += x;
      sum2 += x * x;
      ++n;
    }
  }
  s.jain_fairness = sum2 > 0 ? sum * sum / (static_cast<double>(n) * sum2) : 1;
  s.impossible = acc.impossible;
  s.events = acc.events;
  s.passes = acc.passes;
  return s;
}

std::vector<JobRecord> job_records(const std::vector<TraceJob>& trace,
                                   const std::vector<JobState>& jobs) {
  std::vector<JobRecord> out;
  out.reserve(trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceJob& t = trace[i];
    const JobState& j = jobs[i];
    out.push_back(JobRecord{.id = t.id,
                            .name = t.name,
                            .user = t.user,
                            .submit = t.submit,
                            .start = j.first_start,
                            .end = j.phase == Phase::kDone ? j.end : -1,
                            .gpus = t.gpus,
                            .restarts = j.restarts,
                            .work = t.duration,
                            .productive = j.productive,
                            .timed_out = j.timed_out});
  }
  return out;
}

sched::Job to_sched_job(std::uint32_t index, const TraceJob& t, const JobState& s,
                        const SimConfig& config, DurationNs planned) {
  sched::Job j;
  j.id = index;
  j.user = user_of(t);
  j.gpus = t.gpus;
  // The fewest nodes of the largest kind, at least; the placement may use fewer.
  unsigned per = 1;
  for (const NodeType& nt : config.cluster.types) per = std::max(per, nt.gpus_per_node);
  j.nodes = std::max(1u, (t.gpus + per - 1) / per);
  // "V100M16|V100M32": any of these models; "" any model.
  for (std::size_t at = 0; at < t.gpu_type.size();) {
    const std::size_t bar = std::min(t.gpu_type.find('|', at), t.gpu_type.size());
    if (bar > at) j.models.push_back(t.gpu_type.substr(at, bar - at));
    at = bar + 1;
  }
  if (t.gpu_share < 1.0) {
    j.shared = true;
    const std::uint64_t mem =
        config.cluster.types.empty() ? 0 : config.cluster.types.front().gpu_memory;
    j.gpu_memory = static_cast<std::uint64_t>(t.gpu_share * static_cast<double>(mem));
  }
  j.priority = t.priority;
  j.submit_time = t.submit;
  j.time_limit = t.time_limit > 0 ? t.time_limit : std::max<DurationNs>(planned, 1);
  j.estimate = j.time_limit;
  j.restarts = s.restarts;
  j.attained = static_cast<DurationNs>(s.attained_gpu_s * 1e9);
  return j;
}

}  // namespace cardiac::sim::detail
