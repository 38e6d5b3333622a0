// SPDX-License-Identifier: Apache-2.0
// Small constructors for clusters, jobs and running jobs in the scheduling tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched::testing {

inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
inline constexpr TimeNs kNow = 1'800'000'000LL * kNsPerSec;
inline constexpr DurationNs kMin = 60 * kNsPerSec;
inline constexpr DurationNs kHour = 60 * kMin;

inline Node make_node(std::string name, unsigned gpus, std::uint64_t memory = 80 * kGiB) {
  Node n{.name = std::move(name), .gpus = {}};
  for (unsigned i = 0; i < gpus; ++i) n.gpus.push_back(Gpu{.index = i, .memory_bytes = memory});
  return n;
}

inline Cluster make_cluster(unsigned nodes, unsigned gpus, std::uint64_t memory = 80 * kGiB) {
  Cluster c;
  for (unsigned n = 0; n < nodes; ++n)
    c.nodes.push_back(make_node("n" + std::to_string(n), gpus, memory));
  return c;
}

inline Job make_job(JobId id, unsigned gpus, TimeNs submit = kNow - kHour) {
  Job j;
  j.id = id;
  j.user = "alice";
  j.gpus = gpus;
  j.submit_time = submit + id;  // distinct, increasing with the id
  return j;
}

// A running exclusive job on one node.
inline Running make_running(JobId id, unsigned node, std::vector<unsigned> gpus,
                            DurationNs limit = 0, TimeNs start = kNow - kMin) {
  Running r;
  r.id = id;
  r.user = "bob";
  r.placement = {NodeGpus{.node = node, .gpus = std::move(gpus)}};
  r.start_time = start;
  r.time_limit = limit;
  return r;
}

inline PolicyConfig policy_of(std::string_view text) {
  auto p = parse_policy(text);
  return p ? *p : PolicyConfig{};
}

inline const Start* find_start(const ScheduleResult& r, JobId id) {
  for (const Start& s : r.starts) {
    if (s.job == id) return &s;
  }
  return nullptr;
}

}  // namespace cardiac::sched::testing
