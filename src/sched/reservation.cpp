// SPDX-License-Identifier: Apache-2.0
// The backfill head's reservation: when it first fits as running jobs end by their limits,
// and on which GPUs, found by releasing jobs on the state or, for whole-node requests, by
// counting whole nodes beside it; kept between passes while nothing it depends on changes.
#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "sched/pass.h"
#include "sched/state.h"

namespace cardiac::sched::detail {
namespace {

struct Ending {
  TimeNs end = 0;
  std::size_t seq = 0;
  const Alloc* alloc = nullptr;
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
  WholeNodes whole(state, need);
  auto fits = [&] { return whole.whole(Phase::kAll) >= need.max_nodes; };
  auto plan_at = [&](TimeNs t) {
    const Phase p = whole.whole(Phase::kOk) >= need.max_nodes ? Phase::kOk : Phase::kAll;
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
    if (a.end == kNoEnd) continue;  // never frees its GPUs as far as planning knows
    ends.push_back(Ending{.end = a.end, .seq = ends.size(), .alloc = &a});
  }
}

}  // namespace

// The head's reservation, or the one the last backfill pass on this state planned when
// nothing it depends on changed since (ClusterState::version) and the request is the same:
// a pass after an arrival alone plans what the pass before planned.
std::optional<Plan> reserve(ClusterState& state, const Need& need, bool spread, TimeNs now,
                            const std::vector<std::pair<TimeNs, const Alloc*>>& started) {
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
  for (const auto& [end, alloc] : started) {
    ends.push_back(Ending{.end = end, .seq = ends.size(), .alloc = alloc});
  }
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

std::optional<std::pair<TimeNs, Alloc>> plan_reservation(ClusterState& state, const Need& need,
                                                         bool spread, TimeNs now, bool whole_nodes,
                                                         TimeNs hint) {
  std::vector<Ending> ends;
  running_ends(state, ends);
  auto plan = plan_start(state, ends, need, spread, now, whole_nodes, hint);
  if (!plan) return std::nullopt;
  return std::make_pair(plan->start, std::move(plan->alloc));
}

}  // namespace cardiac::sched::detail
