// SPDX-License-Identifier: Apache-2.0
// One scheduling pass: policy order, strict order or EASY backfill, and the reasons.
#include <algorithm>
#include <unordered_set>

#include "core/format.h"
#include "sched/capacity.h"
#include "sched/order.h"
#include "sched/pass.h"
#include "sched/reasons.h"
#include "sched/sched.h"
#include "sched/state.h"

namespace cardiac::sched {
namespace {

using detail::Alloc;
using detail::ClusterState;
using detail::Need;

enum class Wait : std::uint8_t {
  kStarted,
  kHeld,
  kDeps,        // a dependency has not succeeded yet
  kDepsNever,   // a dependency is gone without succeeding
  kImpossible,  // feasible() fails
  kUnhealthy,   // too large for the GPUs that are not fenced
  kBehind,      // strict order: an earlier job could not start
  kShortfall,   // does not fit now
  kHead,        // backfill: the first job that cannot start; its GPUs are reserved
  kNoPlan,      // backfill: like kHead, but no start time can be planned
  kReserved,    // backfill: fits now but would delay the head job
};

struct Ending {
  TimeNs end = 0;
  std::size_t seq = 0;
  const Alloc* alloc = nullptr;
};

struct Plan {
  TimeNs start = 0;
  Alloc alloc{};
};

// The head job's reservation: release running jobs in order of their expected end (start +
// time limit) until the job fits; that time (the shadow time) and those GPUs are the
// reservation, chosen among the GPUs free then to take as few as possible of those idle now:
// an idle GPU outside the reservation may take a job that runs past it. The releases
// are made on `state` itself and undone before returning (apply is release's exact inverse):
// a copy of the whole cluster for every plan was most of a backfill pass at 100,000 GPUs.
std::optional<Plan> plan_start(ClusterState& state, std::vector<Ending> ends, const Need& need,
                               bool spread, TimeNs now) {
  std::sort(ends.begin(), ends.end(), [](const Ending& a, const Ending& b) {
    return a.end != b.end ? a.end < b.end : a.seq < b.seq;
  });
  std::optional<Plan> plan;
  std::size_t released = 0;
  while (released < ends.size() && !plan) {
    const TimeNs t = ends[released].end;
    for (; released < ends.size() && ends[released].end == t; ++released) {
      state.release(*ends[released].alloc);
    }
    if (auto a = state.find(need, spread)) {
      std::vector<const Alloc*> ended;
      ended.reserve(released);
      for (std::size_t k = 0; k < released; ++k) ended.push_back(ends[k].alloc);
      plan = Plan{.start = std::max(t, now), .alloc = state.prefer_busy(need, *a, ended)};
    }
  }
  for (std::size_t k = released; k-- > 0;) state.apply(*ends[k].alloc);
  return plan;
}

std::vector<Ending> running_ends(const Cluster& cluster, const ClusterState& state) {
  std::vector<Ending> ends;
  for (std::size_t i = 0; i < cluster.running.size(); ++i) {
    const Running& r = cluster.running[i];
    if (r.time_limit <= 0) continue;  // never frees its GPUs as far as planning knows
    ends.push_back(Ending{
        .end = r.start_time + r.time_limit, .seq = ends.size(), .alloc = &state.running()[i]});
  }
  return ends;
}

class Deps {
 public:
  Deps(const Cluster& cluster, const std::vector<Job>& pending, std::vector<JobId> done)
      : cluster_(cluster), pending_(pending), done_(std::move(done)) {
    std::sort(done_.begin(), done_.end());
  }
  // The dependencies that have not succeeded, in the job's order.
  std::vector<JobId> unmet(const Job& job) const {
    std::vector<JobId> out;
    for (JobId d : job.after) {
      if (!std::binary_search(done_.begin(), done_.end(), d)) out.push_back(d);
    }
    return out;
  }
  // Neither pending, running nor succeeded: it ended some other way, so it never will.
  bool gone(JobId id) {
    if (live_.empty()) {
      for (const Job& j : pending_) live_.insert(j.id);
      for (const Running& r : cluster_.running) live_.insert(r.id);
    }
    return !live_.contains(id);
  }

 private:
  const Cluster& cluster_;
  const std::vector<Job>& pending_;
  std::vector<JobId> done_;
  std::unordered_set<JobId> live_;
};

struct Waiting {
  Wait wait = Wait::kStarted;
  std::vector<JobId> deps{};
  std::string impossible{};
};

struct Outcome {
  const std::vector<Waiting>& why;
  std::optional<unsigned> blocker;
  std::optional<unsigned> head;
  const std::optional<Plan>& plan;
  bool backfill = false;
  Order order = Order::kFcfs;
};

void fill_reasons(const Cluster& cluster, const ClusterState& state,
                  const std::vector<Job>& pending, const Outcome& o, TimeNs now,
                  ScheduleResult& res) {
  detail::Explainer explain(cluster, state);
  std::string behind;
  if (o.blocker) {
    const JobId b = pending[*o.blocker].id;
    behind = fmt::format("behind job {} in {} order", b, order_name(o.order));
    if (o.backfill) behind += fmt::format(" (job {} has no planned start)", b);
  }
  const std::string from = o.plan ? detail::when_text(o.plan->start, now) : "";
  auto text = [&](const Job& job, const Waiting& w) -> std::string {
    switch (w.wait) {
      case Wait::kStarted:
        break;
      case Wait::kHeld:
        return "held";
      case Wait::kDeps:
        return fmt::format("waiting for job{} {}", w.deps.size() == 1 ? "" : "s",
                           fmt::join(w.deps, ", "));
      case Wait::kDepsNever:
        return fmt::format("dependency never satisfied: job {} did not succeed", w.deps[0]);
      case Wait::kImpossible:
        return "cannot run on this cluster: " + w.impossible;
      case Wait::kUnhealthy:
        return w.impossible +
               "; it waits for fenced GPUs to be cleared and does not hold back the jobs "
               "behind it";
      case Wait::kBehind:
        return behind;
      case Wait::kShortfall:
        return explain.shortfall(job);
      case Wait::kHead:
        return fmt::format("{}; GPUs reserved for it from {}", explain.shortfall(job), from);
      case Wait::kNoPlan:
        return explain.shortfall(job) +
               "; no start can be planned: it does not fit even after every running job "
               "reaches its time limit";
      case Wait::kReserved:
        return fmt::format("reserved for job {} from {}; {}", pending[*o.head].id, from,
                           job.time_limit > 0
                               ? "it would not finish by then"
                               : "a job without a time limit cannot run ahead of it");
    }
    return {};
  };
  // In id order, so every insertion lands at the end of the map.
  std::vector<unsigned> by_id;
  by_id.reserve(pending.size());
  for (unsigned i = 0; i < pending.size(); ++i) {
    if (o.why[i].wait != Wait::kStarted) by_id.push_back(i);
  }
  std::sort(by_id.begin(), by_id.end(),
            [&](unsigned a, unsigned b) { return pending[a].id < pending[b].id; });
  for (unsigned i : by_id) {
    res.reasons.emplace_hint(res.reasons.end(), pending[i].id, text(pending[i], o.why[i]));
  }
}

}  // namespace

namespace detail {

ScheduleResult run_pass(const Cluster& cluster, ClusterState& state, Capacity& capacity,
                        const std::vector<Job>& pending, const Usage& usage,
                        const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok) {
  ScheduleResult res;
  const bool backfill = policy.backfill;
  const Order order = policy.order;
  detail::Ranking ranking =
      detail::rank_jobs(cluster, pending, usage, policy, order, now, policy.explain);
  res.order.reserve(pending.size());
  for (unsigned i : ranking.order) res.order.push_back(pending[i].id);
  if (policy.explain) {
    res.priorities.reserve(pending.size());
    for (unsigned i : ranking.order) res.priorities.push_back(ranking.priorities[i]);
  }

  Deps deps(cluster, pending, finished_ok);
  std::vector<Waiting> why(pending.size());
  std::optional<unsigned> blocker;  // the job the rest wait behind (strict order)
  std::optional<unsigned> head;     // backfill: the job holding the reservation
  std::optional<Plan> plan;
  // Backfill: the head's reserved GPUs that could take work now (nothing exclusive on them),
  // hidden from jobs that would still run at the reservation. Hidden on `state` itself and
  // shown again for jobs done by then, instead of a copy of the cluster without them.
  std::vector<unsigned> hidden;
  std::vector<std::pair<DurationNs, Alloc>> started;

  for (unsigned idx : ranking.order) {
    const Job& job = pending[idx];
    Waiting& w = why[idx];
    // Held jobs, unmet dependencies and impossible requests are skipped, not blocking: they
    // could hold the whole queue forever otherwise.
    if (job.held) {
      w.wait = Wait::kHeld;
      continue;
    }
    if (!job.after.empty()) {
      w.deps = deps.unmet(job);
      if (!w.deps.empty()) {
        w.wait = Wait::kDeps;
        for (JobId d : w.deps) {
          if (deps.gone(d)) {
            w.wait = Wait::kDepsNever;
            w.deps = {d};
            break;
          }
        }
        continue;
      }
    }
    if (std::string no = capacity.impossible(job); !no.empty()) {
      w.wait = Wait::kImpossible;
      w.impossible = std::move(no);
      continue;
    }
    if (blocker) {
      // Strict order: nothing after the blocker starts; only the reasons need the rest.
      if (!policy.explain) break;
      w.wait = Wait::kBehind;
      continue;
    }
    const Need need = state.need_of(job);
    // Behind the head, a job done by the reservation may use any free GPU; one that runs past
    // it only the GPUs the reservation does not need.
    const bool done_in_time = job.time_limit > 0 && plan && now + job.time_limit <= plan->start;
    if (head && done_in_time) state.unmask(hidden);
    const std::optional<Alloc> a = state.find(need, policy.spread);
    if (a) {
      res.starts.push_back(Start{.job = job.id, .placement = state.to_placement(*a)});
      state.apply(*a);
      if (!head) started.emplace_back(job.time_limit, *a);
    }
    if (head && done_in_time) state.mask(hidden);
    if (a) continue;
    if (!head) {
      // Too large for the healthy GPUs: it would block every job behind it until a fence is
      // cleared, so it is skipped like an impossible job while that lasts.
      if (std::string no = capacity.unhealthy(job); !no.empty()) {
        w.wait = Wait::kUnhealthy;
        w.impossible = std::move(no);
        continue;
      }
    }
    if (head) {
      bool fits = false;
      if (policy.explain) {
        state.unmask(hidden);
        fits = state.fits(need);
        state.mask(hidden);
      }
      w.wait = fits ? Wait::kReserved : Wait::kShortfall;
      continue;
    }
    if (!backfill) {
      blocker = idx;
      res.blocker = job.id;
      w.wait = Wait::kShortfall;
      continue;
    }
    std::vector<Ending> ends = running_ends(cluster, state);
    for (const auto& [limit, alloc] : started) {
      if (limit > 0)
        ends.push_back(Ending{.end = now + limit, .seq = ends.size(), .alloc = &alloc});
    }
    plan = plan_start(state, std::move(ends), need, policy.spread, now);
    if (!plan) {
      // Nothing may pass a job whose start cannot be planned: it would wait forever.
      blocker = idx;
      res.blocker = job.id;
      w.wait = Wait::kNoPlan;
      continue;
    }
    head = idx;
    w.wait = Wait::kHead;
    res.reservation = std::make_pair(job.id, plan->start);
    res.reserved = state.to_placement(plan->alloc);
    for (unsigned g : plan->alloc.gpus) {
      if (state.gpus()[g].usable && state.gpus()[g].exclusive == 0) hidden.push_back(g);
    }
    state.mask(hidden);
    // A job done by the reservation goes onto these first: the GPUs outside the reservation
    // are the only ones a job running past it may take.
    state.prefer(hidden, true);
  }
  state.unmask(hidden);
  state.prefer(hidden, false);

  if (policy.explain) {
    fill_reasons(cluster, state, pending,
                 Outcome{.why = why,
                         .blocker = blocker,
                         .head = head,
                         .plan = plan,
                         .backfill = backfill,
                         .order = order},
                 now, res);
  }
  return res;
}

}  // namespace detail

ScheduleResult schedule(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                        const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok) {
  ClusterState state(cluster);
  detail::Capacity capacity(cluster);
  return detail::run_pass(cluster, state, capacity, pending, usage, policy, now, finished_ok);
}

std::optional<TimeNs> expected_start(const Cluster& cluster, const Job& job, TimeNs now) {
  ClusterState state(cluster);
  const Need need = state.need_of(job);
  if (state.find(need, false)) return now;
  auto plan = plan_start(state, running_ends(cluster, state), need, false, now);
  if (!plan) return std::nullopt;
  return plan->start;
}

}  // namespace cardiac::sched
