// SPDX-License-Identifier: Apache-2.0
// Step times of one model replica from a roofline: a step takes the longer of its FLOPs over
// the replica's peak and its bytes (weights plus the KV cache it reads and writes) over HBM
// bandwidth, each derated by an efficiency factor. docs/sim-serve.md has the formulas.
#pragma once

#include <cstdint>

#include "plan/gpus.h"
#include "plan/inference.h"
#include "plan/model.h"

namespace cardiac::simserve {

struct Efficiency {
  double compute = 0.6;    // share of the datasheet FLOP/s a step reaches
  double bandwidth = 0.8;  // share of the datasheet bytes/s
};

struct CostModel {
  double weight_bytes = 0;        // whole model, read once per step (any batch size)
  double kv_bytes_per_token = 0;  // whole model
  double flops_per_token = 0;     // 2 × active parameters
  double flops_per_pair = 0;      // attention, per (query token, cached token) pair
  double peak_flops = 0;          // the replica's (tp GPUs), derated
  double bandwidth = 0;           // bytes/s, the replica's, derated

  // `tokens` pass through the weights; `pairs` (query, key) attention pairs; `kv_tokens`
  // tokens of KV cache read or written.
  [[nodiscard]] double step(double tokens, double pairs, double kv_tokens) const;

  // n decode steps of `batch` sequences holding `context` cached tokens at the first; each
  // step reads the cache, writes one token per sequence and adds `batch` to the context.
  [[nodiscard]] double decode(double batch, double context) const;
  [[nodiscard]] double decode_span(double batch, double context, std::int64_t n) const;
  // The fewest steps (1..max) whose span reaches `dt`; max when even max steps fall short.
  [[nodiscard]] std::int64_t steps_to_reach(double batch, double context, double dt,
                                            std::int64_t max) const;
};

// The replica of `tp` GPUs that serves `m` with weights and cache of these dtypes.
CostModel make_cost_model(const plan::ModelSpec& m, plan::DType weights, plan::DType kv,
                          const plan::GpuPerf& gpu, int tp, const Efficiency& eff);

}  // namespace cardiac::simserve
