// SPDX-License-Identifier: Apache-2.0
// One scheduling pass: policy order, strict order or EASY backfill, and the reasons.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
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
using detail::Plan;

using detail::Wait;

// Backfill behind the head: a request that found no GPUs finds none later in the pass either,
// since the jobs started meanwhile only take GPUs; nor does one asking as much or more memory
// per GPU. Kept per view (the head's reserved GPUs shown or hidden), so a deep queue of jobs
// of a few shapes costs a search per shape, not per job.
class NoFit {
 public:
  [[nodiscard]] bool known(const Need& n, bool shown) const {
    auto it = memory_.find(key(n, shown));
    return it != memory_.end() && n.memory >= it->second;
  }
  void add(const Need& n, bool shown) {
    auto [it, added] = memory_.try_emplace(key(n, shown), n.memory);
    if (!added) it->second = std::min(it->second, n.memory);
  }

 private:
  using Key = std::tuple<unsigned, unsigned, bool, const detail::NodeSet*, bool>;
  static Key key(const Need& n, bool shown) {
    return {n.gpus, n.max_nodes, n.shared, n.allowed, shown};
  }
  std::map<Key, std::uint64_t> memory_;  // the least memory per GPU known not to fit
};

// What the GPUs could still take: a free GPU, and the most memory left on a GPU only shared
// jobs use. A request beyond both does not fit (one within them still may not).
struct Room {
  bool free = true;
  std::optional<std::uint64_t> shared = std::numeric_limits<std::uint64_t>::max();

  [[nodiscard]] bool takes(const Need& n) const {
    return n.gpus == 0 || free || (n.shared && shared && *shared >= n.memory);
  }
  [[nodiscard]] bool takes_any(const OrderedPending::Least& least) const {
    return free || (shared && *shared >= least.shared_memory);
  }
};

class Deps {
 public:
  Deps(const Cluster& cluster, const OrderedPending& pending, std::vector<JobId> done)
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
    if (!running_built_) {
      for (const Running& r : cluster_.running) running_.insert(r.id);
      running_built_ = true;
    }
    return !pending_.contains(id) && !running_.contains(id);
  }

 private:
  const Cluster& cluster_;
  const OrderedPending& pending_;
  std::vector<JobId> done_;
  std::unordered_set<JobId> running_;
  bool running_built_ = false;
};

struct Waiting {
  Wait wait = Wait::kStarted;
  std::vector<JobId> deps{};
  std::string impossible{};
};

// A job the pass looked at, and why it waits.
struct Seen {
  const Job* job = nullptr;
  Waiting why{};
};

struct Outcome {
  const std::vector<Seen>& seen;
  std::optional<std::size_t> blocker;  // index into seen
  std::optional<std::size_t> head;
  const std::optional<Plan>& plan;
  bool backfill = false;
  Order order = Order::kFcfs;
};

}  // namespace

// Records what the reasons need: per waiting job its kind and an index, per request shape the
// shortfall text against the state after the pass. The words themselves are Reasons::format's.
struct detail::ReasonsBuilder {
  static void fill(const Cluster& cluster, const ClusterState& state, const Outcome& o, TimeNs now,
                   Reasons& r) {
    if (o.blocker) {
      const JobId b = o.seen[*o.blocker].job->id;
      r.behind_ = fmt::format("behind job {} in {} order", b, order_name(o.order));
      if (o.backfill) r.behind_ += fmt::format(" (job {} has no planned start)", b);
    }
    if (o.plan) r.from_ = detail::when_text(o.plan->start, now);
    if (o.head) r.head_ = o.seen[*o.head].job->id;
    detail::Explainer explain(cluster, state);
    // The shortfall depends on the request's shape, not the job: one text per shape.
    std::map<std::tuple<unsigned, unsigned, std::uint64_t, bool, const detail::NodeSet*>,
             std::uint32_t>
        shapes;
    auto shape = [&](const Job& job) {
      const Need n = state.need_of(job);
      auto [it, added] = shapes.try_emplace({n.gpus, n.max_nodes, n.memory, n.shared, n.allowed},
                                            static_cast<std::uint32_t>(r.texts_.size()));
      if (added) r.texts_.push_back(explain.shortfall(job));
      return it->second;
    };
    r.entries_.reserve(o.seen.size());
    JobId last = std::numeric_limits<JobId>::min();
    for (const Seen& s : o.seen) {
      const Waiting& w = s.why;
      std::uint32_t arg = 0;
      switch (w.wait) {
        case Wait::kStarted:
          continue;
        case Wait::kHeld:
        case Wait::kBehind:
          break;
        case Wait::kDeps:
        case Wait::kDepsNever:
          arg = static_cast<std::uint32_t>(r.deps_.size());
          r.deps_.push_back(w.deps);
          break;
        case Wait::kImpossible:
        case Wait::kUnhealthy:
          arg = static_cast<std::uint32_t>(r.texts_.size());
          r.texts_.push_back(w.impossible);
          break;
        case Wait::kShortfall:
        case Wait::kHead:
        case Wait::kNoPlan:
          arg = shape(*s.job);
          break;
        case Wait::kReserved:
          arg = s.job->time_limit > 0 ? 1 : 0;
          break;
      }
      if (s.job->id < last) r.sorted_ = false;
      last = s.job->id;
      r.entries_.push_back({.id = s.job->id, .wait = w.wait, .arg = arg});
    }
  }
};

namespace detail {

OrderedPass run_ordered(const Cluster& cluster, ClusterState& state, Capacity& capacity,
                        OrderedPending& pending, const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok, bool list_read, bool placements) {
  OrderedPass out;
  ScheduleResult& res = out.result;
  const bool backfill = policy.backfill;

  Deps deps(cluster, pending, finished_ok);
  std::vector<Seen> seen;
  std::optional<std::size_t> blocker;  // the job the rest wait behind (strict order)
  std::optional<std::size_t> head;     // backfill: the job holding the reservation
  std::optional<Plan> plan;
  // Backfill: the head's reserved GPUs that could take work now (nothing exclusive on them),
  // hidden from jobs that would still run at the reservation. Hidden on `state` itself and
  // shown again for jobs done by then, instead of a copy of the cluster without them; shown
  // or hidden only when the next job needs the other view, so a run of jobs needing the same
  // view does not pay for a mask and an unmask each.
  // This and the two lists below are kept between passes (cleared, not reallocated): grown
  // afresh on every pass they were a tenth of a simulated year's allocations.
  thread_local std::vector<unsigned> hidden;
  hidden.clear();
  bool shown = true;       // hidden GPUs usable on `state`, as it came
  bool preferred = false;  // hidden GPUs marked as preferred on `state`
  auto show = [&](bool on) {
    if (on == shown) return;
    if (on) {
      state.unmask(hidden);
    } else {
      state.mask(hidden);
    }
    shown = on;
  };
  // Before the head: each start's time limit and its allocation's place in out.allocs.
  thread_local std::vector<std::pair<DurationNs, std::size_t>> started;
  started.clear();
  NoFit nofit;
  // Behind the head: what the GPUs could still take, with the head's reserved GPUs shown
  // (for jobs done by the reservation) or hidden. Starts only take GPUs, so a job that asks
  // for more cannot start, and once no job left could, a pass without reasons stops reading.
  Room room_shown;
  Room room_hidden;
  const OrderedPending::Least least = pending.least();
  // For the reasons: whether a request would fit with the reserved GPUs shown, per shape, until
  // the next start changes the answer.
  std::map<std::tuple<unsigned, unsigned, std::uint64_t, bool, const NodeSet*>, bool> fits_shown;
  auto update_room = [&] {
    fits_shown.clear();
    if (shown && !state.any_shared()) {
      // Without shared GPUs the hidden view's room is a count, found without hiding them:
      // many passes read no further than the head, and a mask and an unmask of a
      // reservation's idle GPUs was most of what they cost.
      unsigned hidden_free = 0;
      for (unsigned g : hidden) hidden_free += state.gpus()[g].is_free() ? 1 : 0;
      room_shown = Room{.free = state.any_free(), .shared = std::nullopt};
      room_hidden = Room{.free = state.free_count() > hidden_free, .shared = std::nullopt};
      return;
    }
    show(false);
    room_hidden = Room{.free = state.any_free(), .shared = state.most_shared_room()};
    room_shown = room_hidden;
    for (unsigned g : hidden) {
      GpuSlot s = state.gpus()[g];
      s.usable = true;
      room_shown.free = room_shown.free || s.is_free();
      if (s.is_shared()) room_shown.shared = std::max(room_shown.shared.value_or(0), s.room());
    }
  };
  // Behind the head, a job that does not start: kept off GPUs the head needs (it would fit
  // with them shown) or short of GPUs; only the reasons tell the two apart.
  auto reserved_or_short = [&](const Need& need) {
    if (!policy.explain || !room_shown.takes(need) || nofit.known(need, true)) {
      return Wait::kShortfall;
    }
    auto [it, added] = fits_shown.try_emplace(
        {need.gpus, need.max_nodes, need.memory, need.shared, need.allowed}, false);
    if (added) {
      show(true);
      it->second = state.fits(need);
      if (!it->second) nofit.add(need, true);
    }
    const bool fits = it->second;
    return fits ? Wait::kReserved : Wait::kShortfall;
  };

  Waiting scratch;  // without reasons nothing is kept of the jobs that wait
  for (const Job* next = pending.next(); next != nullptr; next = pending.next()) {
    const Job& job = *next;
    if (head && !policy.explain && least.gpus > 0 && !room_shown.takes_any(least)) break;
    if (list_read) res.order.push_back(job.id);
    const std::size_t at = seen.size();  // only meaningful with reasons
    if (policy.explain) seen.push_back(Seen{.job = next, .why = {}});
    if (!policy.explain) scratch = {};
    Waiting& w = policy.explain ? seen.back().why : scratch;
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
      // Strict order: nothing after the blocker starts; only the reasons need the rest, so
      // without them the pass reads no further.
      if (!policy.explain) break;
      w.wait = Wait::kBehind;
      continue;
    }
    const Need need = state.need_of(job);
    // Behind the head, a job done by the reservation may use any free GPU; one that runs past
    // it only the GPUs the reservation does not need.
    const bool done_in_time = job.time_limit > 0 && plan && now + job.time_limit <= plan->start;
    if (head && (!(done_in_time ? room_shown : room_hidden).takes(need) ||
                 nofit.known(need, done_in_time))) {
      w.wait = reserved_or_short(need);
      continue;
    }
    if (head) {
      show(done_in_time);
      // A job done by the reservation goes onto the hidden GPUs first: the GPUs outside the
      // reservation are the only ones a job running past it may take. Only a search with
      // them shown reads the preference.
      if (done_in_time && !preferred) {
        state.prefer(hidden, true);
        preferred = true;
      }
    }
    std::optional<Alloc> a = state.find(need, policy.spread);
    if (a) {
      res.starts.push_back(Start{.job = job.id, .placement = {}});
      if (placements) res.starts.back().placement = state.to_placement(*a);
      out.started.push_back(next);
      state.apply(*a);
      if (!head) started.emplace_back(job.time_limit, out.allocs.size());
      out.allocs.push_back(std::move(*a));
      if (head) update_room();
      continue;
    }
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
      nofit.add(need, done_in_time);
      w.wait = reserved_or_short(need);
      continue;
    }
    if (!backfill) {
      blocker = at;
      res.blocker = job.id;
      w.wait = Wait::kShortfall;
      continue;
    }
    thread_local std::vector<std::pair<TimeNs, const Alloc*>> started_ends;
    started_ends.clear();
    for (const auto& [limit, index] : started) {
      if (limit > 0) started_ends.emplace_back(now + limit, &out.allocs[index]);
    }
    plan = detail::reserve(state, need, policy.spread, now, started_ends);
    if (!plan) {
      // Nothing may pass a job whose start cannot be planned: it would wait forever.
      blocker = at;
      res.blocker = job.id;
      w.wait = Wait::kNoPlan;
      continue;
    }
    head = at;
    w.wait = Wait::kHead;
    res.reservation = std::make_pair(job.id, plan->start);
    if (policy.list_reserved) res.reserved = state.to_placement(plan->alloc);
    hidden.reserve(plan->alloc.gpus.size());
    for (unsigned g : plan->alloc.gpus) {
      if (state.gpus()[g].usable && state.gpus()[g].exclusive == 0) hidden.push_back(g);
    }
    update_room();
  }
  show(true);
  if (preferred) state.prefer(hidden, false);

  if (policy.explain) {
    ReasonsBuilder::fill(cluster, state,
                         Outcome{.seen = seen,
                                 .blocker = blocker,
                                 .head = head,
                                 .plan = plan,
                                 .backfill = backfill,
                                 .order = policy.order},
                         now, res.reasons);
  }
  return out;
}

OrderedPass run_pass(const Cluster& cluster, ClusterState& state, Capacity& capacity,
                     const std::vector<Job>& pending, const Usage& usage,
                     const PolicyConfig& policy, TimeNs now, const std::vector<JobId>& finished_ok,
                     bool placements) {
  detail::Ranking ranking =
      detail::rank_jobs(cluster, pending, usage, policy, policy.order, now, policy.explain);
  detail::IndexedPending ordered(pending, ranking.order);
  OrderedPass out =
      run_ordered(cluster, state, capacity, ordered, policy, now, finished_ok, false, placements);
  ScheduleResult& res = out.result;
  // Every pending job, including those a strict pass did not read.
  res.order.reserve(pending.size());
  for (unsigned i : ranking.order) res.order.push_back(pending[i].id);
  if (policy.explain) {
    res.priorities.reserve(pending.size());
    for (unsigned i : ranking.order) res.priorities.push_back(ranking.priorities[i]);
  }
  return out;
}

}  // namespace detail

ScheduleResult schedule(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                        const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok) {
  ClusterState state(cluster);
  detail::Capacity capacity(cluster);
  return detail::run_pass(cluster, state, capacity, pending, usage, policy, now, finished_ok)
      .result;
}

std::optional<TimeNs> expected_start(const Cluster& cluster, const Job& job, TimeNs now) {
  ClusterState state(cluster);
  const Need need = state.need_of(job);
  if (state.find(need, false)) return now;
  auto plan = detail::plan_reservation(state, need, false, now);
  if (!plan) return std::nullopt;
  return plan->first;
}

}  // namespace cardiac::sched
