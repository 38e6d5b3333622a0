// SPDX-License-Identifier: Apache-2.0
// The serving simulation: requests routed to the least-loaded of N/tp model replicas, each
// scheduling its batch under one of four policies (static or continuous batching, with the KV
// cache reserved per request or paged in blocks). Decode steps between two events are taken
// as one span whose length is computed (roofline.h), not one event per token.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "simserve/roofline.h"
#include "simserve/workload.h"

namespace cardiac::simserve {

enum class Batching { kStatic, kContinuous };
enum class KvMode { kReserved, kPaged };

struct Policy {
  Batching batching = Batching::kContinuous;
  KvMode kv = KvMode::kPaged;
  [[nodiscard]] std::string name() const;  // "static-reserved", "continuous-paged", …
};
Result<Policy> parse_policy(std::string_view name);
std::vector<Policy> all_policies();

struct EngineConfig {
  Policy policy;
  CostModel cost;
  int replicas = 1;
  int gpus_per_replica = 1;
  std::int64_t kv_tokens = 0;  // per replica: tokens the KV budget holds
  std::int64_t max_batch = 256;
  std::int64_t max_batched_tokens = 2048;  // prompt tokens per prefill step (chunk budget)
  bool chunked_prefill = true;             // continuous: prompts in chunks beside decodes
  double batch_timeout_s = 0.05;           // static: the longest a batch waits to fill
  std::int64_t max_seq_len = 0;            // reserved per request; 0: the longest request
  std::int64_t block_tokens = 16;          // paged: tokens per block
  double sample_interval_s = 0;            // queue samples; 0: the arrival span / 200
  // Checks the cache accounting from scratch after every step (O(batch) each: tests only).
  bool check_invariants = false;
  // Tests: at most this many decode steps per span (0: as many as the events allow), to compare
  // the spans with the step-by-step simulation they stand for.
  std::int64_t max_span = 0;
  std::vector<ServiceClass> classes = {ServiceClass{"default", 1, std::nullopt, std::nullopt}};
};

struct Percentiles {
  double mean = 0, p50 = 0, p99 = 0;
  std::int64_t count = 0;
};

struct ClassResult {
  std::string name;
  std::int64_t requests = 0;  // completed
  Percentiles ttft, tpot, e2e;
  double slo_met = -1;  // share meeting the class's ttft/tpot targets; -1 without targets
};

struct ServeResult {
  std::string policy;
  std::int64_t requests = 0, completed = 0, rejected = 0, preemptions = 0;
  std::int64_t steps = 0;  // forward passes, all replicas
  double makespan_s = 0;   // first arrival to last token
  std::int64_t input_tokens = 0, output_tokens = 0;
  double input_tps = 0, output_tps = 0;
  Percentiles ttft, tpot, e2e, queue_wait;
  double gpu_busy = 0;    // share of the makespan the replicas spent in steps
  double mean_batch = 0;  // rows in a decode step, on average
  // KV cache, per replica averaged over time (tokens): held by requests vs allocated to them.
  double kv_used_tokens = 0, kv_allocated_tokens = 0, kv_waste = 0;
  std::int64_t kv_peak_allocated_tokens = 0;  // the largest any replica held
  std::int64_t kv_budget_tokens = 0;          // per replica
  double padding_waste = 0;  // share of output-token slots computed for no request (static)
  // Little's law on the waiting queue: L (time-average length), lambda (admissions per
  // second), W (mean time waiting, re-waits after preemption included).
  double little_l = 0, little_lambda = 0, little_w = 0;
  double sample_interval_s = 0;
  std::vector<std::int64_t> queue;  // requests waiting at each sample time (all replicas)
  std::vector<ClassResult> classes;
};

// Called with the share of arrivals routed so far, at most about a hundred times.
using Progress = std::function<void(double)>;

Result<ServeResult> simulate(const EngineConfig& config, const std::vector<Request>& requests,
                             const Progress& progress = {});

}  // namespace cardiac::simserve
