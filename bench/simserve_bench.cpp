// SPDX-License-Identifier: Apache-2.0
// `cardiac sim serve`'s engine: one million requests through each policy (bench/README.md).
#include <benchmark/benchmark.h>

#include "plan/gpus.h"
#include "simserve/engine.h"

namespace {

using namespace cardiac::simserve;  // NOLINT(google-build-using-namespace): a benchmark file

constexpr std::uint64_t kRequests = 1000000;

std::vector<Request> workload(double rate) {
  PoissonWorkload w{rate, kRequests, *parse_length("lognormal:512:8192", "p"),
                    *parse_length("lognormal:200:2048", "o"), 1};
  return generate(w, EngineConfig{}.classes);
}

EngineConfig llama_h100(Policy p, int replicas) {
  EngineConfig c;
  c.policy = p;
  c.cost = make_cost_model(*cardiac::plan::find_preset("Llama-3.1-8B"), cardiac::plan::DType::kBf16,
                           cardiac::plan::DType::kBf16, *cardiac::plan::find_gpu_perf("H100-80GB"),
                           1, {});
  c.kv_tokens = 467012;  // what `cardiac sim serve` budgets on an H100-80GB (vLLM rule)
  c.replicas = replicas;
  return c;
}

void run(benchmark::State& state, const EngineConfig& c, const std::vector<Request>& reqs) {
  std::int64_t steps = 0;
  for (auto _ : state) {
    auto r = simulate(c, reqs);
    if (!r) {
      state.SkipWithError(r.error().what().c_str());
      return;
    }
    steps = r->steps;
    benchmark::DoNotOptimize(r->output_tps);
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(reqs.size()));
}

// One H100, 20 requests/s (about 80 % of what continuous batching sustains there).
void BM_OneGpu(benchmark::State& state) {
  static const auto reqs = workload(20);
  run(state, llama_h100(all_policies()[static_cast<std::size_t>(state.range(0))], 1), reqs);
  state.SetLabel(all_policies()[static_cast<std::size_t>(state.range(0))].name());
}
BENCHMARK(BM_OneGpu)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Iterations(2);

// Eight replicas at 160 requests/s: every arrival visits every replica.
void BM_EightReplicas(benchmark::State& state) {
  static const auto reqs = workload(160);
  run(state, llama_h100({Batching::kContinuous, KvMode::kPaged}, 8), reqs);
}
BENCHMARK(BM_EightReplicas)->Unit(benchmark::kMillisecond)->Iterations(2);

// Overloaded with a small cache: the queue grows and paged blocks run out (preemptions).
void BM_OverloadedPaged(benchmark::State& state) {
  static const auto reqs = workload(40);
  EngineConfig c = llama_h100({Batching::kContinuous, KvMode::kPaged}, 1);
  c.kv_tokens = 60000;
  run(state, c, reqs);
}
BENCHMARK(BM_OverloadedPaged)->Unit(benchmark::kMillisecond)->Iterations(2);

// Generating the million requests (not in the figures above).
void BM_GenerateWorkload(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(workload(20).data());
}
BENCHMARK(BM_GenerateWorkload)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
