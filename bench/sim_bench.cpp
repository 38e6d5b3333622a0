// SPDX-License-Identifier: Apache-2.0
// The simulator at the three scales: the openb trace (8,152 tasks) per policy, the
// Llama 3 setting (16,384 GPUs, 54 days, failures) and a synthetic year of 1,000,000 jobs on
// 100,000 GPUs with failures. Counters: events per second of wall time.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "sim/engine.h"
#include "sim/synth.h"
#include "sim/trace.h"

namespace {

namespace sim = cardiac::sim;
constexpr cardiac::TimeNs kDay = 86400 * cardiac::kNsPerSec;

const sim::Trace& openb() {
  static const sim::Trace t =
      *sim::load_trace(std::string(CARDIAC_SOURCE_DIR) +
                           "/tests/fixtures/traces/alibaba-openb/openb_pod_list_default.csv",
                       "openb");
  return t;
}

void run(benchmark::State& state, const sim::SimConfig& c, const std::vector<sim::TraceJob>& jobs) {
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto r = sim::simulate(c, jobs);
    if (!r) {
      state.SkipWithError(r.error().what().c_str());
      return;
    }
    events += r->summary.events;
    benchmark::DoNotOptimize(r->summary.goodput);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

sim::SimConfig openb_config(const char* policy) {
  sim::SimConfig c;
  auto groups = *sim::load_openb_nodes(std::string(CARDIAC_SOURCE_DIR) +
                                       "/tests/fixtures/traces/alibaba-openb/"
                                       "openb_node_list_gpu_node.csv");
  for (const auto& g : groups) {
    c.cluster.types.push_back(
        sim::NodeType{.model = g.model, .gpus_per_node = g.gpus_per_node, .count = g.count});
  }
  std::stable_sort(c.cluster.types.begin(), c.cluster.types.end(),
                   [](const auto& a, const auto& b) { return a.gpus_per_node > b.gpus_per_node; });
  c.policy = *cardiac::sched::parse_policy(policy);
  c.policy.explain = false;
  return c;
}

void BM_Openb(benchmark::State& state, const char* policy) {
  run(state, openb_config(policy), openb().jobs);
}
BENCHMARK_CAPTURE(BM_Openb, fcfs, "fcfs")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Openb, backfill, "backfill")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Openb, priority, "priority")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Openb, fairshare, "fairshare")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Openb, sjf, "sjf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Openb, las, "las")->Unit(benchmark::kMillisecond);

// A busy research cluster the size of the Llama 3 run: jobs of 1–1,024 GPUs at 85 % offered
// load for 54 days, the llama3 failure preset and Daly checkpoints.
void BM_Llama3Scale(benchmark::State& state) {
  sim::SimConfig c;
  c.cluster = *sim::parse_cluster("2048x8+64");
  c.policy = *cardiac::sched::parse_policy("backfill");
  c.policy.explain = false;
  c.failures = *sim::failure_preset("llama3");
  c.checkpoint = *sim::parse_checkpoint_policy("daly,write=30s,restart=5m");
  c.horizon = 54 * kDay;
  sim::SynthParams p = *sim::synth_preset("kalos");
  p.jobs = 40'000;
  p.cluster_gpus = 16384;
  p.target_load = 0.85;
  p.max_gpus = 1024;
  p.mean_duration_s = 6 * 3600.0;
  p.median_duration_s = 3600.0;
  p.max_duration_s = 14 * 86400.0;
  const sim::Trace t = sim::synthesize(p, 1);
  run(state, c, t.jobs);
}
BENCHMARK(BM_Llama3Scale)->Unit(benchmark::kMillisecond);

// 100,000 GPUs for a year: 1,000,000 jobs (1–4,096 GPUs) at 80 % offered load, failures from
// the llama3 preset, Daly checkpoints; FCFS (0) and EASY backfill (1).
void BM_Year100k(benchmark::State& state) {
  sim::SimConfig c;
  c.cluster = *sim::parse_cluster("12500x8+100");
  c.policy = *cardiac::sched::parse_policy(state.range(0) ? "backfill" : "fcfs");
  c.policy.explain = false;
  c.failures = *sim::failure_preset("llama3");
  c.checkpoint = *sim::parse_checkpoint_policy("daly,write=30s,restart=5m");
  c.horizon = 365 * kDay;
  c.keep_jobs = false;
  sim::SynthParams p = *sim::synth_preset("kalos");
  p.jobs = 1'000'000;
  p.cluster_gpus = 100'000;
  p.target_load = 0.8;
  p.max_gpus = 4096;
  p.mean_gpus = 32;
  p.median_gpus = 8;
  p.mean_duration_s = 0.8 * 100'000 * 365 * 86400.0 / 1e6 / 32;
  p.median_duration_s = p.mean_duration_s / 5;
  p.max_duration_s = 30 * 86400.0;
  const sim::Trace t = sim::synthesize(p, 1);
  run(state, c, t.jobs);
}
BENCHMARK(BM_Year100k)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1);

// A queue that only grows: 1-GPU jobs arriving uniformly over one day on 80 GPUs, simulated to
// the end of that day. About 1,900 jobs start (one per job end); everything else waits behind
// a blocked FCFS head, so the queue ends near the job count. A pass must cost what it starts,
// not what waits: time should grow linearly with the job count. The 2.1 M-job case runs only
// with CARDIAC_BENCH_LARGE=1 set (it holds 2 M jobs in memory).
void BM_DeepFcfsQueue(benchmark::State& state) {
  if (state.range(0) > 1'000'000 && std::getenv("CARDIAC_BENCH_LARGE") == nullptr) {
    state.SkipWithError("set CARDIAC_BENCH_LARGE=1 to run");
    return;
  }
  sim::SimConfig c;
  c.cluster = *sim::parse_cluster("10x8");
  c.policy = *cardiac::sched::parse_policy("fcfs");
  c.policy.explain = false;
  c.horizon = kDay;
  c.keep_jobs = false;
  sim::SynthParams p = *sim::synth_preset("kalos");
  p.jobs = static_cast<std::size_t>(state.range(0));
  p.target_load = 0;
  p.days = 1;
  p.max_gpus = 1;
  p.mean_gpus = 1;
  p.median_gpus = 1;
  p.mean_duration_s = 3600;
  p.median_duration_s = 3000;
  p.max_duration_s = 86400;
  const sim::Trace t = sim::synthesize(p, 1);
  std::uint64_t passes = 0;
  for (auto _ : state) {
    auto r = sim::simulate(c, t.jobs);
    if (!r) {
      state.SkipWithError(r.error().what().c_str());
      return;
    }
    passes = r->summary.passes;
    benchmark::DoNotOptimize(r->summary.goodput);
  }
  state.counters["passes"] = static_cast<double>(passes);
}
BENCHMARK(BM_DeepFcfsQueue)
    ->Arg(21'300)
    ->Arg(213'000)
    ->Arg(2'130'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// An over-subscribed week: 34,000 kalos-like jobs arriving over 7 days on 264 x 8 GPUs, so
// thousands wait at any time; priority orders must not sort the whole queue on every pass.
void BM_OversubscribedWeek(benchmark::State& state, const char* policy) {
  sim::SimConfig c;
  c.cluster = *sim::parse_cluster("264x8");
  c.policy = *cardiac::sched::parse_policy(policy);
  c.policy.explain = false;
  c.horizon = 7 * kDay;
  c.keep_jobs = false;
  sim::SynthParams p = *sim::synth_preset("kalos");
  p.jobs = 34'000;
  p.target_load = 0;
  p.days = 7;
  p.max_gpus = 256;
  const sim::Trace t = sim::synthesize(p, 1);
  run(state, c, t.jobs);
}
BENCHMARK_CAPTURE(BM_OversubscribedWeek, fcfs, "fcfs")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_OversubscribedWeek, backfill, "backfill")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_OversubscribedWeek, priority, "priority")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_OversubscribedWeek, fairshare, "fairshare")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// openb's pods, each five times at its own submit time (15,390 shared pods among 31,000), on
// 8-GPU nodes (the second argument: how many) with EASY backfill, so that a queue builds up.
// /1/N keeps the fractional GPUs, /0/N rounds every pod up to whole GPUs: the shared run
// should cost a small multiple of the whole one.
void BM_OpenbShared(benchmark::State& state) {
  sim::SimConfig c = openb_config("backfill");
  c.cluster = *sim::parse_cluster(std::to_string(state.range(1)) + "x8");
  std::vector<sim::TraceJob> jobs;
  for (const sim::TraceJob& t : openb().jobs) {
    for (int k = 0; k < 5; ++k) {
      sim::TraceJob copy = t;
      copy.id = static_cast<std::int64_t>(jobs.size());
      copy.submit /= state.range(2);
      copy.gpu_type.clear();
      if (state.range(0) == 0) copy.gpu_share = 1.0;
      jobs.push_back(std::move(copy));
    }
  }
  run(state, c, jobs);
}
BENCHMARK(BM_OpenbShared)
    ->Args({0, 100, 100})
    ->Args({1, 100, 100})
    ->Args({0, 300, 1000})
    ->Args({1, 300, 1000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
