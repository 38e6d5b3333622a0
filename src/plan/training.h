// SPDX-License-Identifier: Apache-2.0
// Training memory per GPU: weights, gradients, optimizer states with ZeRO and tensor/pipeline
// sharding, activations with or without recomputation, and the largest micro-batch that fits.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "plan/model.h"

namespace cardiac::plan {

enum class Optimizer { kAdamW, kAdamW8bit, kSgd };
std::string_view optimizer_name(Optimizer o);
std::optional<Optimizer> parse_optimizer(std::string_view name);

enum class Recompute { kNone, kSelective, kFull };
std::string_view recompute_name(Recompute r);
std::optional<Recompute> parse_recompute(std::string_view name);

struct TrainingOptions {
  Optimizer optimizer = Optimizer::kAdamW;
  Recompute recompute = Recompute::kSelective;
  int zero = 0;  // ZeRO stage 0 (plain data parallel), 1, 2 or 3
  int dp = 1;    // data-parallel ranks the ZeRO stages shard over
  int tp = 1;
  int pp = 1;
  std::int64_t seq_len = 4096;
  std::int64_t micro_batch = 1;
};

// Bytes per parameter before sharding, mixed precision (bf16 weights and gradients):
// AdamW 2 + 2 + 12 (fp32 master, m, v) = 16; 8-bit AdamW 2 + 2 + 6 (fp32 master, two 1-byte
// moments) = 10; SGD with momentum 2 + 2 + 8 = 12.
double optimizer_state_bytes_per_param(Optimizer o);

struct TrainingMemory {
  double weights = 0;  // per GPU, after sharding
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;  // for opts.micro_batch
  double activations_per_sample = 0;
  double runtime = 0;  // CUDA context, NCCL, allocator slack
  [[nodiscard]] double total() const {
    return weights + gradients + optimizer + activations + runtime;
  }
};

TrainingMemory plan_training(const ModelSpec& m, const TrainingOptions& o);

// The largest micro-batch whose total fits in `gpu_bytes`; 0 when not even one does.
std::int64_t largest_micro_batch(const ModelSpec& m, const TrainingOptions& o, double gpu_bytes);

}  // namespace cardiac::plan
