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

using detail::Wait;

struct Ending {
  TimeNs end = 0;
  std::size_t seq = 0;
  const Alloc* alloc = nullptr;
};

struct Plan {
  TimeNs start = 0;
  TimeNs end = 0;  // the end time at which the job fits; start is the later of it and now
  Alloc alloc{};
};

// The reservation of a request that takes whole nodes (ClusterState::takes_whole_nodes):
// the ends in the same order, counting the nodes they leave whole instead of releasing them
// on the state. The inner nullopt: it never fits; the outer: a GPU's holders make counting
// inexact, and `ends` (reordered) is left for the search below. The ends up to `hint` (the
// last reservation's end for this request: this one is usually no later) are sorted, a few
// hundred of thousands; the rest go on a heap only if the search gets that far.
std::optional<std::optional<Plan>> plan_whole_nodes(const ClusterState& state,
                                                    std::vector<Ending>& ends, const Need& need,
                                                    TimeNs now, TimeNs hint) {
  detail::WholeNodes whole(state, need);
  auto fits = [&] { return whole.whole(detail::Phase::kAll) >= need.max_nodes; };
  auto plan_at = [&](TimeNs t) {
    const detail::Phase p = whole.whole(detail::Phase::kOk) >= need.max_nodes ? detail::Phase::kOk
                                                                              : detail::Phase::kAll;
    return Plan{.start = std::max(t, now), .end = t, .alloc = whole.pick(p, need.max_nodes)};
  };
  const auto mid =
      std::partition(ends.begin(), ends.end(), [&](const Ending& e) { return e.end <= hint; });
  std::sort(ends.begin(), mid, [](const Ending& a, const Ending& b) {
    return a.end != b.end ? a.end < b.end : a.seq < b.seq;
  });
  for (auto it = ends.begin(); it != mid;) {
    const TimeNs t = it->end;
    for (; it != mid && it->end == t; ++it) {
      if (!whole.release(*it->alloc)) return std::nullopt;
    }
    if (fits()) return plan_at(t);
  }
  auto later = [](const Ending& a, const Ending& b) {
    return a.end != b.end ? a.end > b.end : a.seq > b.seq;
  };
  std::make_heap(mid, ends.end(), later);
  // The heap is [mid, live); what was taken off it stays behind it.
  for (auto live = ends.end(); live != mid;) {
    const TimeNs t = mid->end;
    while (live != mid && mid->end == t) {
      std::pop_heap(mid, live, later);
      --live;
      if (!whole.release(*live->alloc)) return std::nullopt;
    }
    if (fits()) return plan_at(t);
  }
  return std::optional<Plan>{};
}

// The head job's reservation: release running jobs in order of their expected end (start +
// time limit) until the job fits; that time (the shadow time) and those GPUs are the
// reservation, chosen among the GPUs free then to take as few as possible of those idle now:
// an idle GPU outside the reservation may take a job that runs past it. The releases
// are made on `state` itself and undone before returning (apply is release's exact inverse):
// a copy of the whole cluster for every plan was most of a backfill pass at 100,000 GPUs.
// Releasing more only frees GPUs, so whether the job fits is monotone in the number of end
// times released: for a shared job (each search a scan of the shared nodes) the first that
// fits is found by galloping then bisecting, a logarithmic number of searches instead of one
// per end time.
std::optional<Plan> plan_start(ClusterState& state, std::vector<Ending>& ends, const Need& need,
                               bool spread, TimeNs now, bool whole_nodes = true,
                               TimeNs hint = std::numeric_limits<TimeNs>::min()) {
  if (whole_nodes && state.takes_whole_nodes(need)) {
    if (auto plan = plan_whole_nodes(state, ends, need, now, hint)) return *plan;
  }
  // The ends in order, taken from a heap as far as the search needs them: a request usually
  // fits after a few, and sorting every running job's end on each backfill pass cost more
  // than the search.
  auto later = [](const Ending& a, const Ending& b) {
    return a.end != b.end ? a.end > b.end : a.seq > b.seq;
  };
  std::make_heap(ends.begin(), ends.end(), later);
  std::vector<Ending> sorted;
  sorted.reserve(ends.size());
  // bounds[g]: how many ends are released once the g-th distinct end time is reached.
  std::vector<std::size_t> bounds;
  // Whether the g-th distinct end time exists; takes the ends up to it off the heap.
  auto group = [&](std::size_t g) {
    while (bounds.size() <= g && !ends.empty()) {
      const TimeNs t = ends.front().end;
      while (!ends.empty() && ends.front().end == t) {
        std::pop_heap(ends.begin(), ends.end(), later);
        sorted.push_back(ends.back());
        ends.pop_back();
      }
      bounds.push_back(sorted.size());
    }
    return g < bounds.size();
  };
  std::size_t released = 0;
  auto release_to = [&](std::size_t k) {
    for (; released < k; ++released) state.release(*sorted[released].alloc);
    while (released > k) state.apply(*sorted[--released].alloc);
  };
  auto fits_after = [&](std::size_t g) {
    release_to(bounds[g]);
    return state.fits(need);
  };
  // The first group after which it fits lies in (bad, good]; bad = -1 stands for none.
  std::ptrdiff_t bad = -1;
  std::optional<std::size_t> good;
  // Exclusive requests are a few index lookups each: tried at every end time, they cost less
  // than the extra releases of a gallop (even a multi-node one: galloping made the
  // 100,000-GPU backfill year slower). A shared request scans the shared nodes.
  const bool gallop = need.shared;
  for (std::size_t step = 1, g = 0; group(g); step = gallop ? step * 2 : 1) {
    if (fits_after(g)) {
      good = g;
      break;
    }
    bad = static_cast<std::ptrdiff_t>(g);
    g += step;
    // Past the last end time: try the last one, unless it was just tried.
    if (!group(g) && static_cast<std::size_t>(bad) + 1 < bounds.size()) g = bounds.size() - 1;
  }
  std::optional<Plan> plan;
  if (good) {
    while (static_cast<std::ptrdiff_t>(*good) - bad > 1) {
      const std::size_t mid =
          static_cast<std::size_t>(bad + (static_cast<std::ptrdiff_t>(*good) - bad) / 2);
      if (fits_after(mid)) {
        good = mid;
      } else {
        bad = static_cast<std::ptrdiff_t>(mid);
      }
    }
    release_to(bounds[*good]);
    if (auto a = state.find(need, spread)) {
      std::vector<const Alloc*> ended;
      ended.reserve(released);
      for (std::size_t k = 0; k < released; ++k) ended.push_back(sorted[k].alloc);
      plan = Plan{.start = std::max(sorted[released - 1].end, now),
                  .end = sorted[released - 1].end,
                  .alloc = state.prefer_busy(need, *a, ended)};
    }
  }
  release_to(0);
  return plan;
}

// The running jobs' ends, from the state's allocations (Alloc::end, index-aligned with
// Cluster::running): a walk over every Running for two fields was a tenth of a 100,000-GPU
// backfill year.
void running_ends(const ClusterState& state, std::vector<Ending>& ends) {
  ends.clear();
  ends.reserve(state.running().size());
  for (const Alloc& a : state.running()) {
    if (a.end == detail::kNoEnd) continue;  // never frees its GPUs as far as planning knows
    ends.push_back(Ending{.end = a.end, .seq = ends.size(), .alloc = &a});
  }
}

// The head's reservation, or the one the last backfill pass on this state planned when
// nothing it depends on changed since (ClusterState::version) and the request is the same:
// a pass after an arrival alone plans what the pass before planned. `add_ends` adds the ends
// of the jobs started earlier in this pass (none when the version is unchanged).
template <class AddEnds>
std::optional<Plan> kept_or_planned(ClusterState& state, const Need& need, bool spread, TimeNs now,
                                    AddEnds&& add_ends) {
  std::optional<ClusterState::KeptPlan>& kept = state.kept_plan();
  const bool same_request = kept && kept->spread == spread && kept->need.gpus == need.gpus &&
                            kept->need.max_nodes == need.max_nodes &&
                            kept->need.memory == need.memory && kept->need.shared == need.shared &&
                            kept->need.allowed == need.allowed;
  if (same_request && kept->version == state.version()) {
    return Plan{.start = std::max(kept->end, now), .end = kept->end, .alloc = kept->alloc};
  }
  // Kept between passes: every running job's end, a vector allocated afresh for each plan,
  // was a large allocation (and the allocator consolidating its free lists) per backfill pass.
  thread_local std::vector<Ending> ends;
  running_ends(state, ends);
  add_ends(ends);
  std::optional<Plan> plan =
      plan_start(state, ends, need, spread, now, true,
                 same_request ? kept->end : std::numeric_limits<TimeNs>::min());
  kept.reset();
  if (plan) {
    kept = ClusterState::KeptPlan{.version = state.version(),
                                  .need = need,
                                  .spread = spread,
                                  .end = plan->end,
                                  .alloc = plan->alloc};
  }
  return plan;
}

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
                        const std::vector<JobId>& finished_ok, bool list_read) {
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
  std::vector<unsigned> hidden;
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
  std::vector<std::pair<DurationNs, std::size_t>> started;
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
      res.starts.push_back(Start{.job = job.id, .placement = state.to_placement(*a)});
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
    plan = kept_or_planned(state, need, policy.spread, now, [&](std::vector<Ending>& ends) {
      for (const auto& [limit, index] : started) {
        if (limit > 0) {
          ends.push_back(
              Ending{.end = now + limit, .seq = ends.size(), .alloc = &out.allocs[index]});
        }
      }
    });
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
                     const PolicyConfig& policy, TimeNs now,
                     const std::vector<JobId>& finished_ok) {
  detail::Ranking ranking =
      detail::rank_jobs(cluster, pending, usage, policy, policy.order, now, policy.explain);
  detail::IndexedPending ordered(pending, ranking.order);
  OrderedPass out = run_ordered(cluster, state, capacity, ordered, policy, now, finished_ok, false);
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

namespace detail {

std::optional<std::pair<TimeNs, Alloc>> plan_reservation(ClusterState& state, const Need& need,
                                                         bool spread, TimeNs now, bool whole_nodes,
                                                         TimeNs hint) {
  std::vector<Ending> ends;
  running_ends(state, ends);
  auto plan = plan_start(state, ends, need, spread, now, whole_nodes, hint);
  if (!plan) return std::nullopt;
  return std::make_pair(plan->start, std::move(plan->alloc));
}

}  // namespace detail

std::optional<TimeNs> expected_start(const Cluster& cluster, const Job& job, TimeNs now) {
  ClusterState state(cluster);
  const Need need = state.need_of(job);
  if (state.find(need, false)) return now;
  std::vector<Ending> ends;
  running_ends(state, ends);
  auto plan = plan_start(state, ends, need, false, now);
  if (!plan) return std::nullopt;
  return plan->start;
}

}  // namespace cardiac::sched
