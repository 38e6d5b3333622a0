// SPDX-License-Identifier: Apache-2.0
// EASY backfill (Lifka; Mu'alem & Feitelson) on one machine, counting GPUs only, written from
// the textbook rule and nothing of src/sched: the scheduler's tests (sched, sim, queue) compare
// their starts with it on random workloads, where placement cannot matter.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/clock.h"

namespace cardiac::sched::testing {

struct EasyRunning {
  unsigned gpus = 0;
  TimeNs end = 0;  // start + time limit
};

struct EasyJob {
  std::int64_t id = 0;
  unsigned gpus = 0;
  DurationNs limit = 0;  // > 0
};

// One pass over `queue` (in order) at `now` on `total` GPUs: the ids that start. Jobs start in
// order while they fit; the first that does not is the head: the shadow time is when enough
// running jobs (by their ends) have freed its GPUs, the extra GPUs are those free then beyond
// its need. A later job starts if it fits now and ends by the shadow time, or if it fits now
// and needs no more than the extra GPUs (which it then uses up).
inline std::vector<std::int64_t> easy_pass(unsigned total, std::vector<EasyRunning> running,
                                           const std::vector<EasyJob>& queue, TimeNs now) {
  std::vector<std::int64_t> started;
  long free = total;
  for (const EasyRunning& r : running) free -= r.gpus;
  bool head = false;
  TimeNs shadow = 0;
  long extra = 0;
  for (const EasyJob& j : queue) {
    const long g = j.gpus;
    if (!head) {
      if (g <= free) {
        started.push_back(j.id);
        free -= g;
        running.push_back({j.gpus, now + j.limit});
        continue;
      }
      head = true;
      std::sort(running.begin(), running.end(),
                [](const EasyRunning& a, const EasyRunning& b) { return a.end < b.end; });
      long avail = free;
      std::optional<TimeNs> at;
      for (std::size_t i = 0; i < running.size(); ++i) {
        avail += running[i].gpus;
        if (i + 1 < running.size() && running[i + 1].end == running[i].end) continue;
        if (avail >= g) {
          at = std::max(running[i].end, now);
          break;
        }
      }
      if (!at) return started;  // never fits: nothing passes it
      shadow = *at;
      extra = avail - g;
      continue;
    }
    if (g > free) continue;
    if (now + j.limit <= shadow) {
      started.push_back(j.id);
      free -= g;
    } else if (g <= extra) {
      started.push_back(j.id);
      free -= g;
      extra -= g;
    }
  }
  return started;
}

struct EasyTraceJob {
  TimeNs submit = 0;
  unsigned gpus = 0;
  DurationNs duration = 0;  // also its time limit: it runs exactly that long
};

// Start time of every job (index = id) when `jobs` (sorted by submit) run on `total` GPUs
// under FCFS-ordered EASY, with a pass at every submit and every end, after all the ends and
// submits of that instant.
inline std::vector<TimeNs> easy_simulate(unsigned total, const std::vector<EasyTraceJob>& jobs) {
  std::vector<TimeNs> start(jobs.size(), -1);
  struct Run {
    std::size_t job;
    TimeNs end;
  };
  std::vector<Run> running;
  std::vector<std::size_t> pending;  // in submit order, then index
  std::size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    TimeNs t = std::numeric_limits<TimeNs>::max();
    if (next < jobs.size()) t = jobs[next].submit;
    for (const Run& r : running) t = std::min(t, r.end);
    std::erase_if(running, [&](const Run& r) { return r.end <= t; });
    while (next < jobs.size() && jobs[next].submit <= t) pending.push_back(next++);
    std::vector<EasyRunning> now_running;
    for (const Run& r : running) now_running.push_back({jobs[r.job].gpus, r.end});
    std::vector<EasyJob> queue;
    for (std::size_t i : pending) {
      queue.push_back({static_cast<std::int64_t>(i), jobs[i].gpus, jobs[i].duration});
    }
    for (std::int64_t id : easy_pass(total, now_running, queue, t)) {
      const auto i = static_cast<std::size_t>(id);
      start[i] = t;
      running.push_back({i, t + jobs[i].duration});
      std::erase(pending, i);
    }
    if (running.empty() && next >= jobs.size()) break;  // what is left can never start
  }
  return start;
}

}  // namespace cardiac::sched::testing
