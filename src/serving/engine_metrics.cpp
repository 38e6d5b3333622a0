// SPDX-License-Identifier: Apache-2.0
#include "serving/engine_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

namespace cardiac::serving {
namespace {

enum class Field { kKvUsage, kWaiting, kRunning, kPreemptions };

struct Name {
  std::string_view metric;
  std::string_view engine;
  Field field;
  double scale;  // to a fraction for usage
};

// vLLM v0 named the cache gauge gpu_cache_usage_perc, v1 kv_cache_usage_perc; both are
// fractions despite "perc". SGLang's token_usage is the fraction of KV tokens in use. TGI has
// no cache gauge; its queue and batch sizes are the waiting and running requests.
constexpr std::array kNames = {
    Name{"vllm:gpu_cache_usage_perc", "vLLM", Field::kKvUsage, 1},
    Name{"vllm:kv_cache_usage_perc", "vLLM", Field::kKvUsage, 1},
    Name{"vllm:num_requests_waiting", "vLLM", Field::kWaiting, 1},
    Name{"vllm:num_requests_running", "vLLM", Field::kRunning, 1},
    Name{"vllm:num_preemptions_total", "vLLM", Field::kPreemptions, 1},
    Name{"sglang:token_usage", "SGLang", Field::kKvUsage, 1},
    Name{"sglang:num_queue_reqs", "SGLang", Field::kWaiting, 1},
    Name{"sglang:num_running_reqs", "SGLang", Field::kRunning, 1},
    Name{"tgi_queue_size", "TGI", Field::kWaiting, 1},
    Name{"tgi_batch_current_size", "TGI", Field::kRunning, 1},
};

void merge(std::optional<double>& into, double v, bool take_max) {
  if (!std::isfinite(v)) return;
  if (!into) {
    into = v;
  } else {
    into = take_max ? std::max(*into, v) : *into + v;
  }
}

std::string count(double v) {
  return fmt::format("{:.0f}", v);
}

// "5 requests waiting, 31 running", or without the part the engine does not report.
std::string queue_text(const EngineStats& s) {
  std::string out = fmt::format("{} requests waiting", count(s.requests_waiting.value_or(0)));
  if (s.requests_running) out += fmt::format(", {} running", count(*s.requests_running));
  return out;
}

}  // namespace

EngineStats engine_stats(const std::vector<PromSample>& samples) {
  EngineStats s;
  for (const auto& p : samples) {
    for (const auto& n : kNames) {
      if (p.name != n.metric) continue;
      s.engine = std::string(n.engine);
      switch (n.field) {
        case Field::kKvUsage:
          merge(s.kv_cache_usage, p.value * n.scale, true);
          break;
        case Field::kWaiting:
          merge(s.requests_waiting, p.value, false);
          break;
        case Field::kRunning:
          merge(s.requests_running, p.value, false);
          break;
        case Field::kPreemptions:
          merge(s.preemptions_total, p.value, false);
          break;
      }
    }
  }
  if (s.engine.empty()) {
    s.error =
        "no vLLM, SGLang or TGI metrics in the answer (is this the engine's /metrics, and are "
        "its metrics enabled?)";
  }
  return s;
}

std::optional<ServingVerdict> judge_engine(const EngineStats& now, const EngineStats* before,
                                           std::optional<double> gpu_busy_pct) {
  if (!now.ok()) return std::nullopt;
  const double waiting = now.requests_waiting.value_or(0);
  std::optional<double> preempted;
  if (before != nullptr && before->ok() && before->preemptions_total && now.preemptions_total &&
      *now.preemptions_total > *before->preemptions_total) {
    preempted = *now.preemptions_total - *before->preemptions_total;
  }
  const std::string who =
      now.engine.empty() ? now.url : fmt::format("{} at {}", now.engine, now.url);
  if (now.kv_cache_usage && *now.kv_cache_usage >= kKvFullFraction && (waiting > 0 || preempted)) {
    ServingVerdict v;
    v.kind = Bottleneck::kKvCacheFull;
    v.title = fmt::format("{}: KV cache {:.0f} % full{}: inference is memory-bound", who,
                          *now.kv_cache_usage * 100,
                          preempted ? fmt::format(", {} requests preempted", count(*preempted))
                                    : fmt::format(", {} requests waiting", count(waiting)));
    v.explanation =
        "The engine has no room left in its KV cache for more sequences: new requests wait, "
        "and running ones are preempted (their cache thrown away and recomputed later). More "
        "compute does not help; more KV memory, or less needed per sequence, does.";
    v.evidence.push_back(fmt::format("KV cache usage {:.1f} %", *now.kv_cache_usage * 100));
    v.evidence.push_back(queue_text(now));
    if (preempted) {
      v.evidence.push_back(fmt::format("{} preemptions since the previous scrape ({} in all)",
                                       count(*preempted), count(*now.preemptions_total)));
    }
    v.actions = {
        "Store the KV cache in fp8 (vLLM --kv-cache-dtype fp8) to hold twice the tokens",
        "Spread the model over more GPUs (--tensor-parallel-size) so more memory is left for "
        "the cache, or add replicas",
        "Lower --max-model-len to the longest context you really serve, or raise "
        "--gpu-memory-utilization if other memory allows",
        "Run `cardiac plan` with your model and context length to see what fits"};
    return v;
  }
  if (waiting > 0 && gpu_busy_pct && *gpu_busy_pct < kQueueIdleBusyPct) {
    ServingVerdict v;
    v.kind = Bottleneck::kScheduling;
    v.title = fmt::format(
        "{}: {} requests waiting while its GPUs are {:.0f} % busy: batching or scheduling, "
        "not hardware",
        who, count(waiting), *gpu_busy_pct);
    v.explanation =
        "Requests queue although the GPUs have time to spare, and the KV cache is not what "
        "holds them back: the engine does not admit more sequences into its batch. The limit "
        "is its scheduler's configuration (the maximum number of sequences, or of batched "
        "tokens), static batching, or a front end that feeds it one request at a time.";
    v.evidence.push_back(queue_text(now));
    v.evidence.push_back(fmt::format("GPU utilization {:.0f} %", *gpu_busy_pct));
    if (now.kv_cache_usage) {
      v.evidence.push_back(fmt::format("KV cache usage {:.1f} %", *now.kv_cache_usage * 100));
    }
    v.actions = {
        "Raise the engine's batch limits (vLLM --max-num-seqs and --max-num-batched-tokens, "
        "SGLang --max-running-requests, TGI --max-batch-total-tokens)",
        "Use continuous batching (every current engine has it; a static-batching server or "
        "a proxy that serialises requests does not)",
        "Check the scheduler's settings and the front end: chunked prefill, request "
        "priorities, a client or gateway that limits concurrency"};
    return v;
  }
  return std::nullopt;
}

}  // namespace cardiac::serving
