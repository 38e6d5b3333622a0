// SPDX-License-Identifier: Apache-2.0
#include "plan/training.h"

#include <gtest/gtest.h>

namespace cardiac::plan {
namespace {

// A model of exactly 7e9 parameters is awkward to build from shapes; scale figures of a real
// one by its own count instead.
double per_param(const ModelSpec& m, double bytes) {
  return static_cast<double>(parameter_count(m)) * bytes;
}

TEST(Training, MixedPrecisionAdamIs16BytesPerParameter) {
  EXPECT_EQ(2.0 + 2.0 + optimizer_state_bytes_per_param(Optimizer::kAdamW), 16.0);
  // 7e9 parameters × 16 = 112 GB before sharding; ZeRO-3 over 8 → 14 GB.
  EXPECT_EQ(7e9 * 16 / 1e9, 112.0);
  auto m = *find_preset("Qwen2.5-7B");
  TrainingOptions o;
  TrainingMemory r = plan_training(m, o);
  EXPECT_DOUBLE_EQ(r.weights + r.gradients + r.optimizer, per_param(m, 16));
  o.zero = 3;
  o.dp = 8;
  r = plan_training(m, o);
  EXPECT_DOUBLE_EQ(r.weights + r.gradients + r.optimizer, per_param(m, 2));
}

TEST(Training, ZeroStagesShardStateByState) {
  auto m = *find_preset("Llama-3.1-8B");
  TrainingOptions o;
  o.dp = 4;
  o.zero = 1;
  TrainingMemory z1 = plan_training(m, o);
  EXPECT_DOUBLE_EQ(z1.optimizer, per_param(m, 12) / 4);
  EXPECT_DOUBLE_EQ(z1.gradients, per_param(m, 2));
  o.zero = 2;
  TrainingMemory z2 = plan_training(m, o);
  EXPECT_DOUBLE_EQ(z2.gradients, per_param(m, 2) / 4);
  EXPECT_DOUBLE_EQ(z2.weights, per_param(m, 2));
  o.zero = 3;
  EXPECT_DOUBLE_EQ(plan_training(m, o).weights, per_param(m, 2) / 4);
  o.zero = 0;  // plain data parallel: every rank holds everything
  EXPECT_DOUBLE_EQ(plan_training(m, o).optimizer, per_param(m, 12));
  o.tp = 2;
  EXPECT_DOUBLE_EQ(plan_training(m, o).optimizer, per_param(m, 12) / 2);
}

TEST(Training, EightBitOptimizerAndSgd) {
  auto m = *find_preset("Llama-3.1-8B");
  TrainingOptions o;
  o.optimizer = Optimizer::kAdamW8bit;
  EXPECT_DOUBLE_EQ(plan_training(m, o).optimizer, per_param(m, 6));
  o.optimizer = Optimizer::kSgd;
  EXPECT_DOUBLE_EQ(plan_training(m, o).optimizer, per_param(m, 8));
}

TEST(Training, ActivationsWithAndWithoutRecomputation) {
  auto m = *find_preset("Llama-3.1-8B");
  TrainingOptions o;
  o.seq_len = 4096;
  const double logits = 4096.0 * 128256 * 4;
  o.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(plan_training(m, o).activations, 32 * 2.0 * 4096 * 4096 + logits);
  o.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(plan_training(m, o).activations, 32 * 34.0 * 4096 * 4096 + logits);
  o.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(plan_training(m, o).activations,
                   32 * (34.0 * 4096 * 4096 + 5.0 * 32 * 4096 * 4096) + logits);
  o.micro_batch = 3;
  EXPECT_DOUBLE_EQ(
      plan_training(m, o).activations,
      3 * plan_training(m, TrainingOptions{.recompute = Recompute::kNone}).activations);
}

TEST(Training, LargestMicroBatch) {
  auto m = *find_preset("Llama-3.1-8B");
  TrainingOptions o;
  o.zero = 3;
  o.dp = 8;
  o.recompute = Recompute::kFull;
  const double gpu = 80.0 * (1ULL << 30);
  TrainingMemory one = plan_training(m, o);
  const double room = gpu - (one.total() - one.activations);
  const auto expected = static_cast<std::int64_t>(room / one.activations_per_sample);
  EXPECT_EQ(largest_micro_batch(m, o, gpu), expected);
  EXPECT_GT(expected, 1);
  o.micro_batch = expected;
  EXPECT_LE(plan_training(m, o).total(), gpu);
  o.micro_batch = expected + 1;
  EXPECT_GT(plan_training(m, o).total(), gpu);
  // Without sharding, 8 B parameters × 16 bytes do not fit in 80 GiB at all.
  EXPECT_EQ(largest_micro_batch(m, TrainingOptions{}, gpu), 0);
}

}  // namespace
}  // namespace cardiac::plan
