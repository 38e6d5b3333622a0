// SPDX-License-Identifier: Apache-2.0
#include "plan/training.h"

#include <cmath>

namespace cardiac::plan {
namespace {

constexpr double kRuntimeBytes = 1024.0 * 1024.0 * 1024.0;  // context + NCCL + allocator slack
constexpr double kWeightBytes = 2.0;                        // bf16 working copy
constexpr double kGradBytes = 2.0;

}  // namespace

std::string_view optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return "adamw";
    case Optimizer::kAdamW8bit:
      return "adamw-8bit";
    case Optimizer::kSgd:
      return "sgd";
  }
  return "adamw";
}

std::optional<Optimizer> parse_optimizer(std::string_view name) {
  for (Optimizer o : {Optimizer::kAdamW, Optimizer::kAdamW8bit, Optimizer::kSgd}) {
    if (optimizer_name(o) == name) return o;
  }
  return std::nullopt;
}

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (recompute_name(r) == name) return r;
  }
  return std::nullopt;
}

double optimizer_state_bytes_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return 12.0;
    case Optimizer::kAdamW8bit:
      return 6.0;
    case Optimizer::kSgd:
      return 8.0;
  }
  return 12.0;
}

TrainingMemory plan_training(const ModelSpec& m, const TrainingOptions& o) {
  TrainingMemory r;
  // Tensor and pipeline parallelism split every model state; ZeRO then shards over the
  // data-parallel ranks: stage 1 the optimizer states, 2 also the gradients, 3 also the weights.
  const double params = static_cast<double>(parameter_count(m)) / (o.tp * o.pp);
  const double dp = o.dp > 0 ? o.dp : 1;
  r.weights = params * kWeightBytes / (o.zero >= 3 ? dp : 1.0);
  r.gradients = params * kGradBytes / (o.zero >= 2 ? dp : 1.0);
  r.optimizer = params * optimizer_state_bytes_per_param(o.optimizer) / (o.zero >= 1 ? dp : 1.0);
  // Activations per layer for one sample (Korthikanti et al. 2022, 16-bit, tensor parallel t
  // without sequence parallelism): s·h·(10 + 24/t) plus 5·a·s²/t for the attention scores
  // unless they are recomputed (selective, or a fused attention kernel); full recomputation
  // keeps only each layer's input, 2·s·h.
  const double s = static_cast<double>(o.seq_len);
  const double h = m.hidden;
  const double t = o.tp;
  double per_layer = 0;
  switch (o.recompute) {
    case Recompute::kNone:
      per_layer = s * h * (10.0 + 24.0 / t) + 5.0 * m.heads * s * s / t;
      break;
    case Recompute::kSelective:
      per_layer = s * h * (10.0 + 24.0 / t);
      break;
    case Recompute::kFull:
      per_layer = 2.0 * s * h;
      break;
  }
  const double stage_layers = std::ceil(static_cast<double>(m.layers) / o.pp);
  // The fp32 logits of the last stage (its share of the vocabulary).
  const double logits = s * static_cast<double>(m.vocab) * 4.0 / t;
  r.activations_per_sample = per_layer * stage_layers + logits;
  r.activations = r.activations_per_sample * static_cast<double>(o.micro_batch);
  r.runtime = kRuntimeBytes;
  return r;
}

std::int64_t largest_micro_batch(const ModelSpec& m, const TrainingOptions& o, double gpu_bytes) {
  TrainingOptions one = o;
  one.micro_batch = 1;
  const TrainingMemory mem = plan_training(m, one);
  const double room = gpu_bytes - (mem.total() - mem.activations);
  if (room < mem.activations_per_sample) return 0;
  return static_cast<std::int64_t>(std::floor(room / mem.activations_per_sample));
}

}  // namespace cardiac::plan
