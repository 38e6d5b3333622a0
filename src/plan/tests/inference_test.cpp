// SPDX-License-Identifier: Apache-2.0
#include "plan/inference.h"

#include <gtest/gtest.h>

#include "plan/gpus.h"

namespace cardiac::plan {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
constexpr std::uint64_t k80GiB = 80ULL << 30;

ModelSpec preset(const char* name) {
  auto m = find_preset(name);
  EXPECT_TRUE(m) << name;
  return m.value_or(ModelSpec{});
}

TEST(KvCache, Llama8BIs128KiBPerToken) {
  const ModelSpec m = preset("Llama-3.1-8B");
  // 2 × 32 layers × 8 KV heads × 128 × 2 bytes.
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 131072.0);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16) * 512, 64 * kMiB);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16) * 2048, 256 * kMiB);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16) * 2048 * 32, 8 * kGiB);
}

TEST(KvCache, MultiHeadAttentionIsHeadsOverKvHeadsLarger) {
  ModelSpec mha = preset("Llama-3.1-8B");
  mha.kv_heads = mha.heads;
  EXPECT_EQ(kv_bytes_per_token(mha, DType::kBf16), 4 * 131072.0);
}

TEST(KvCache, LatentAttentionCachesLatentPlusRope) {
  // (512 + 64) × 61 layers × 2 bytes; ordinary attention with 128 heads of 128 would be
  // 2 × 61 × 128 × 128 × 2.
  const ModelSpec m = preset("DeepSeek-V3");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 576.0 * 61 * 2);
  ModelSpec plain = m;
  plain.kv_latent = 0;
  EXPECT_EQ(kv_bytes_per_token(plain, DType::kBf16), 2.0 * 61 * 128 * 128 * 2);
}

TEST(KvCache, Fp8HalvesIt) {
  const ModelSpec m = preset("Llama-3.1-8B");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 65536.0);
  EXPECT_EQ(kv_bytes_per_token(preset("DeepSeek-V3"), DType::kFp8), 576.0 * 61);
}

TEST(Weights, ByDtype) {
  const ModelSpec m = preset("Llama-3.1-8B");
  ASSERT_EQ(parameter_count(m), 8030261248);
  GpuMemory gpu{"x", k80GiB, k80GiB};
  InferenceOptions o;
  for (auto [d, bytes] : {std::pair{DType::kBf16, 2.0},
                          {DType::kFp16, 2.0},
                          {DType::kFp8, 1.0},
                          {DType::kInt8, 1.0},
                          {DType::kInt4, 0.5}}) {
    o.weights = d;
    EXPECT_EQ(plan_inference(m, o, gpu).weights, 8030261248.0 * bytes) << dtype_name(d);
  }
}

TEST(Budget, VllmTakesAFractionOfTotal) {
  const ModelSpec m = preset("Llama-3.1-8B");
  GpuMemory gpu{"x", k80GiB, k80GiB};
  InferenceOptions o;  // vLLM, bf16, 2,048 tokens
  InferenceMemory r = plan_inference(m, o, gpu);
  // 8,192 tokens × (4 × 4,096 + 2 × 14,336) × 2 bytes + 256 sequences × 128,256 × 4 bytes.
  EXPECT_EQ(r.activation_peak, 869531648.0);
  EXPECT_EQ(r.non_torch, 0.5 * kGiB);
  EXPECT_DOUBLE_EQ(r.kv_budget, 0.92 * 85899345920.0 - 16060522496.0 - 869531648.0 - 536870912.0);
  EXPECT_EQ(r.kv_tokens, 469669);
  EXPECT_EQ(r.max_concurrency, 229);  // 469,669 / 2,048
  EXPECT_TRUE(r.fits);
  o.concurrency = 4;
  EXPECT_EQ(plan_inference(m, o, gpu).max_context, 117417);  // 469,669 / 4
}

TEST(Budget, SglangUsesItsOwnFraction) {
  const ModelSpec m = preset("Llama-3.1-8B");
  GpuMemory gpu{"x", k80GiB, k80GiB};
  InferenceOptions o;
  o.engine = Engine::kSglang;
  EXPECT_DOUBLE_EQ(plan_inference(m, o, gpu).budget, 0.88 * 85899345920.0);
  o.memory_fraction = 0.5;
  EXPECT_DOUBLE_EQ(plan_inference(m, o, gpu).budget, 0.5 * 85899345920.0);
}

TEST(Budget, TensorRtLlmTakesAFractionOfWhatIsFreeAfterLoading) {
  const ModelSpec m = preset("Llama-3.1-8B");
  GpuMemory gpu{"x", k80GiB, k80GiB};
  InferenceOptions o;
  o.engine = Engine::kTrtllm;
  InferenceMemory r = plan_inference(m, o, gpu);
  EXPECT_DOUBLE_EQ(r.kv_budget, 0.9 * (85899345920.0 - 16060522496.0 - 869531648.0 - 536870912.0));
  EXPECT_EQ(r.kv_tokens, 469888);
}

TEST(Budget, MemoryOtherProcessesHoldIsNotAvailable) {
  const ModelSpec m = preset("Llama-3.1-8B");
  GpuMemory shared{"x", k80GiB, 20ULL << 30};
  InferenceOptions o;
  InferenceMemory vllm = plan_inference(m, o, shared);
  EXPECT_EQ(vllm.budget, 20 * kGiB);
  EXPECT_EQ(vllm.other_processes, 60 * kGiB);
  EXPECT_EQ(vllm.fraction_limit, 0.25);  // vLLM starts only when asked for what is free
  EXPECT_FALSE(plan_inference(m, o, GpuMemory{"x", k80GiB, k80GiB}).fraction_limit);
  o.engine = Engine::kTrtllm;
  EXPECT_DOUBLE_EQ(plan_inference(m, o, shared).kv_budget,
                   0.9 * (20 * kGiB - 16060522496.0 - 869531648.0 - 536870912.0));
  GpuMemory full{"x", k80GiB, 10ULL << 30};
  InferenceMemory none = plan_inference(m, InferenceOptions{}, full);
  EXPECT_FALSE(none.fits);
  EXPECT_NE(none.reason.find("leave no room for the KV cache"), std::string::npos);
}

TEST(Parallel, TensorParallelSplitsWeightsAndKvHeads) {
  const ModelSpec m = preset("Llama-3.1-70B");
  GpuMemory gpu = *find_gpu("H100-80GB");
  InferenceOptions o;
  o.tp = 8;
  InferenceMemory r = plan_inference(m, o, gpu);
  EXPECT_DOUBLE_EQ(r.weights, static_cast<double>(parameter_count(m)) * 2 / 8);
  EXPECT_EQ(r.kv_per_token, 2.0 * 80 * 1 * 128 * 2);  // one of the 8 KV heads per GPU
  EXPECT_EQ(r.non_torch, 1.0 * kGiB);                 // NCCL joins in
  o.tp = 16;  // more ranks than KV heads: each keeps a copy of one
  EXPECT_EQ(plan_inference(m, o, gpu).kv_per_token, 2.0 * 80 * 1 * 128 * 2);
  o.tp = 4;
  o.pp = 2;
  EXPECT_EQ(plan_inference(m, o, gpu).kv_per_token, 2.0 * 40 * 2 * 128 * 2);
  o.tp = 3;
  o.pp = 1;
  InferenceMemory odd = plan_inference(m, o, gpu);
  EXPECT_FALSE(odd.fits);
  EXPECT_NE(odd.reason.find("does not divide the 64 attention heads"), std::string::npos);
}

TEST(Parallel, SmallestFitAndSuggestions) {
  const ModelSpec m = preset("Llama-3.1-70B");
  GpuMemory gpu = *find_gpu("H100-80GB");
  InferenceOptions o;
  EXPECT_FALSE(plan_inference(m, o, gpu).fits);  // 141 GB of weights on one 80 GB GPU
  auto fit = smallest_fit(m, o, gpu, 8);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->tp, 2);
  EXPECT_FALSE(smallest_fit(m, o, gpu, 1));
  auto s = suggest_inference(m, o, gpu, 8);
  ASSERT_FALSE(s.empty());
  // fp8 weights (70.6 GB) leave about 6 GB for the cache in 0.92 × 80 GiB.
  EXPECT_EQ(s.front().change, "fp8 weights (--dtype fp8)");
  EXPECT_EQ(s.back().change, "more GPUs: 2 (--tp 2 --pp 1)");
}

TEST(Parallel, AChangeMayFitOnFewerGpusThanMoreGpusAlone) {
  const ModelSpec m = preset("Llama-3.1-70B");
  GpuMemory shared{"x", k80GiB, 20ULL << 30};
  InferenceOptions o;
  auto s = suggest_inference(m, o, shared, 8);
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].change, "fp8 weights (--dtype fp8 --tp 4 --pp 1)");
  EXPECT_EQ(s[1].change, "more GPUs: 8 (--tp 8 --pp 1)");
}

TEST(Growth, StopsFittingWhereTheSequencesOutgrowTheCache) {
  const ModelSpec m = preset("Llama-3.1-8B");
  GpuMemory gpu{"x", k80GiB, k80GiB};
  InferenceOptions o;
  o.concurrency = 32;
  auto curve = growth_curve(m, o, gpu);
  ASSERT_EQ(curve.size(), 5U);  // 512, 2,048, 8,192, 32,768 and the maximum, 131,072
  EXPECT_EQ(curve[0].context, 512);
  EXPECT_EQ(curve[0].kv_per_sequence, 64 * kMiB);
  EXPECT_EQ(curve[1].kv_per_sequence, 256 * kMiB);
  EXPECT_TRUE(curve[2].fits);   // 8,192 × 32 = 262,144 tokens of 469,669
  EXPECT_FALSE(curve[3].fits);  // 32,768 × 32 = 1 M tokens
  EXPECT_EQ(curve[3].max_concurrency, 14);
}

TEST(Growth, ContextBeyondTheModelDoesNotFit) {
  const ModelSpec m = preset("Qwen2.5-7B");
  GpuMemory gpu{"x", k80GiB, k80GiB};
  InferenceOptions o;
  o.context = 65536;
  InferenceMemory r = plan_inference(m, o, gpu);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.reason, "context 65536 exceeds the model's maximum of 32768 tokens");
}

}  // namespace
}  // namespace cardiac::plan
