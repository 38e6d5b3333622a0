// SPDX-License-Identifier: Apache-2.0
// One scheduling pass (src/sched) on a mostly busy 1,000-node x 8-GPU cluster with 10,000
// pending jobs of mixed sizes, per policy; and the same on 12,500 nodes (100k GPUs), the
// simulator's scale; and the live queue's pass (KeptOrder between two recomputations of the
// priority factors, and at one). Target: one live-queue pass (with reasons, 1,000 x 8 GPUs)
// under 2 ms for every policy, backfill included (bench/README.md has the figures against it).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sched/kept_order.h"
#include "sched/sched.h"

namespace {

namespace sched = cardiac::sched;
using cardiac::DurationNs;
using cardiac::TimeNs;

constexpr TimeNs kSec = 1'000'000'000;
constexpr TimeNs kNow = 1'800'000'000 * kSec;
constexpr DurationNs kHour = 3600 * kSec;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

struct Workload {
  sched::Cluster cluster;
  std::vector<sched::Job> pending;
  sched::Usage usage;
};

unsigned job_size(std::mt19937& rng) {
  const unsigned roll = rng() % 100;
  if (roll < 40) return 1;
  if (roll < 60) return 2;
  if (roll < 80) return 4;
  if (roll < 95) return 8;
  return 16;
}

// Running jobs fill about 95% of the GPUs, node by node, with the same size mix as the queue.
Workload make_workload(unsigned nodes, unsigned pending) {
  std::mt19937 rng(42);
  Workload w;
  for (unsigned n = 0; n < nodes; ++n) {
    sched::Node node{.name = "node" + std::to_string(n), .gpus = {}};
    for (unsigned g = 0; g < 8; ++g) {
      node.gpus.push_back(sched::Gpu{.index = g,
                                     .memory_bytes = 80 * kGiB,
                                     .nvlink_domain = static_cast<int>(g / 4),
                                     .numa_node = static_cast<int>(g / 4)});
    }
    if (rng() % 200 == 0) node.gpus[rng() % 8].health = sched::GpuHealth::kFenced;
    w.cluster.nodes.push_back(std::move(node));
  }
  sched::JobId next = 1'000'000;
  for (unsigned n = 0; n < nodes; ++n) {
    unsigned g = 0;
    while (g < 8) {
      const unsigned size = std::min({job_size(rng), 8u, 8 - g});
      if (rng() % 100 < 5) {  // leave some holes
        g += size;
        continue;
      }
      sched::Running r;
      r.id = next++;
      r.user = "user" + std::to_string(rng() % 200);
      r.placement = {sched::NodeGpus{.node = n, .gpus = {}}};
      for (unsigned k = 0; k < size; ++k) r.placement[0].gpus.push_back(g + k);
      r.start_time = kNow - static_cast<TimeNs>(rng() % 24) * kHour;
      r.time_limit = rng() % 10 == 0 ? 0 : static_cast<DurationNs>(1 + rng() % 48) * kHour;
      w.cluster.running.push_back(std::move(r));
      g += size;
    }
  }
  for (unsigned a = 0; a < 20; ++a) {
    w.usage.accounts.push_back(
        sched::Account{.name = "acct" + std::to_string(a), .parent = "", .shares = 1.0 + a % 3});
  }
  for (unsigned u = 0; u < 200; ++u) {
    const std::string name = "user" + std::to_string(u);
    w.usage.users.push_back(
        sched::UserShare{.user = name, .account = "acct" + std::to_string(u % 20), .shares = 1});
    w.usage.usage[name] = static_cast<double>(rng() % 100'000);
  }
  w.usage.updated_at = kNow;
  for (unsigned i = 0; i < pending; ++i) {
    sched::Job j;
    j.id = static_cast<sched::JobId>(i) + 1;
    j.user = "user" + std::to_string(rng() % 200);
    j.gpus = job_size(rng);
    j.nodes = j.gpus > 8 ? 2 : 1;
    j.priority = static_cast<int>(rng() % 10);
    j.submit_time = kNow - static_cast<TimeNs>(rng() % (72 * 3600)) * kSec;
    j.time_limit = rng() % 5 == 0 ? 0 : static_cast<DurationNs>(1 + rng() % 24) * kHour;
    j.held = rng() % 100 == 0;
    w.pending.push_back(std::move(j));
  }
  return w;
}

const Workload& workload(unsigned nodes) {
  static const Workload kSmall = make_workload(1000, 10'000);
  static const Workload kLarge = make_workload(12'500, 10'000);
  return nodes == 1000 ? kSmall : kLarge;
}

void pass(benchmark::State& state, const char* policy, unsigned nodes, bool explain) {
  const Workload& w = workload(nodes);
  auto p = sched::parse_policy(policy);
  if (!p) {
    state.SkipWithError("bad policy");
    return;
  }
  p->explain = explain;
  std::size_t starts = 0;
  for (auto _ : state) {
    auto r = sched::schedule(w.cluster, w.pending, w.usage, *p, kNow);
    starts = r.starts.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["starts"] = static_cast<double>(starts);
  state.counters["pending"] = static_cast<double>(w.pending.size());
  state.counters["gpus"] = static_cast<double>(nodes * 8);
}

// The live queue's pass between two recomputations of the priority factors (KeptOrder, the
// default 5 min priority_calc_period): the jobs come in the database's order and keep the
// order of the last recomputation, with reasons, as `cardiac queue` and `why` read them.
void live_pass(benchmark::State& state, const char* policy) {
  const Workload& w = workload(1000);
  auto p = sched::parse_policy(policy);
  if (!p) {
    state.SkipWithError("bad policy");
    return;
  }
  sched::KeptOrder kept(5 * 60 * kSec);
  (void)kept.pass(w.cluster, w.pending, w.usage, *p, kNow);  // the recomputation
  std::size_t starts = 0;
  for (auto _ : state) {
    auto r = kept.pass(w.cluster, w.pending, w.usage, *p, kNow + kSec);
    starts = r.starts.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["starts"] = static_cast<double>(starts);
  state.counters["pending"] = static_cast<double>(w.pending.size());
}

// The live queue's pass at a recomputation of the priority factors (priority_calc_period 0:
// every pass recomputes), the placement state kept from the pass before.
void live_pass_recompute(benchmark::State& state, const char* policy) {
  const Workload& w = workload(1000);
  auto p = sched::parse_policy(policy);
  if (!p) {
    state.SkipWithError("bad policy");
    return;
  }
  sched::KeptOrder kept(0);
  (void)kept.pass(w.cluster, w.pending, w.usage, *p, kNow);  // builds the placement state
  std::size_t starts = 0;
  for (auto _ : state) {
    auto r = kept.pass(w.cluster, w.pending, w.usage, *p, kNow + kSec);
    starts = r.starts.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["starts"] = static_cast<double>(starts);
  state.counters["pending"] = static_cast<double>(w.pending.size());
}

void register_all() {
  for (const char* policy : {"fcfs", "priority", "fairshare", "backfill", "backfill:priority"}) {
    const std::string name = std::string("LivePass/") + policy + "/gpus:8000";
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
      live_pass(s, policy);
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        (std::string("LivePassRecompute/") + policy + "/gpus:8000").c_str(),
        [=](benchmark::State& s) { live_pass_recompute(s, policy); })
        ->Unit(benchmark::kMillisecond);
  }
  for (const char* policy : {"fcfs", "priority", "fairshare", "backfill", "backfill:priority"}) {
    for (unsigned nodes : {1000u, 12'500u}) {
      for (bool explain : {true, false}) {
        const std::string name = std::string("SchedulePass/") + policy +
                                 "/gpus:" + std::to_string(nodes * 8) +
                                 (explain ? "" : "/no_explain");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          pass(s, policy, nodes, explain);
        })->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
