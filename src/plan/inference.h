// SPDX-License-Identifier: Apache-2.0
// Inference memory: weights, KV cache, activation peak and runtime overhead per GPU, the
// serving engines' KV budget rules, and what fits (docs/plan.md has the formulas).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "plan/model.h"

namespace cardiac::plan {

enum class DType { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4 };

double dtype_bytes(DType d);
std::string_view dtype_name(DType d);
std::optional<DType> parse_dtype(std::string_view name);

enum class Engine { kVllm, kSglang, kTrtllm };
std::string_view engine_name(Engine e);
std::optional<Engine> parse_engine(std::string_view name);
// The fraction of memory the engine takes by default: vLLM gpu_memory_utilization 0.92,
// SGLang mem_fraction_static 0.88, TensorRT-LLM free_gpu_memory_fraction 0.9.
double default_memory_fraction(Engine e);

// Bytes of KV cache one token occupies across the whole model.
// Standard/GQA: 2 × layers × kv_heads × head_dim × bytes. MLA: (latent + rope) × layers × bytes.
double kv_bytes_per_token(const ModelSpec& m, DType kv);

// One GPU as the planner sees it.
struct GpuMemory {
  std::string name;
  std::uint64_t total = 0;
  std::uint64_t free = 0;  // free now; equals total for a GPU from the spec table
};

struct InferenceOptions {
  DType weights = DType::kBf16;
  DType kv = DType::kBf16;
  Engine engine = Engine::kVllm;
  std::optional<double> memory_fraction;  // default_memory_fraction(engine) when unset
  int tp = 1;
  int pp = 1;
  std::int64_t context = 2048;  // tokens per sequence (prompt + output)
  std::int64_t concurrency = 1;
  std::int64_t max_batched_tokens = 8192;  // the engine's prefill chunk / profile batch
  std::int64_t max_seqs = 256;             // sequences sampled at once (logits buffer)
};

// Per GPU of a tp × pp group (every GPU of the group holds the same share).
struct InferenceMemory {
  double weights = 0;          // this GPU's share of the weights
  double activation_peak = 0;  // the engine's profile forward pass
  double non_torch = 0;        // CUDA context, NCCL and allocator overhead
  double other_processes = 0;  // memory already in use on the GPU (total − free)
  double budget = 0;           // what the engine may use in all
  double kv_budget = 0;        // left for the KV cache (may be negative)
  double kv_per_token = 0;     // this GPU's share of one token's KV
  double kv_per_token_model = 0;
  std::int64_t kv_tokens = 0;        // tokens the KV budget holds
  std::int64_t max_concurrency = 0;  // sequences of opts.context at once
  std::int64_t max_context = 0;      // tokens per sequence at opts.concurrency
  bool fits = false;                 // loads and serves opts.concurrency × opts.context
  std::string reason;                // why not, when !fits
  // vLLM/SGLang on a GPU others use: the largest fraction the engine would start with.
  std::optional<double> fraction_limit;
};

double activation_peak_bytes(const ModelSpec& m, const InferenceOptions& o);
double non_torch_bytes(const InferenceOptions& o);

// The plan for one GPU of the group (the smallest-memory GPU decides for the group).
InferenceMemory plan_inference(const ModelSpec& m, const InferenceOptions& o, const GpuMemory& gpu);

// One row of the prompt-growth curve.
struct GrowthPoint {
  std::int64_t context = 0;
  double kv_per_sequence = 0;  // whole model, bytes
  std::int64_t max_concurrency = 0;
  bool fits = false;  // max_concurrency >= the requested concurrency
};
// 512, 2,048, 8,192, … (×4) up to the model's maximum context (or 1 M tokens).
std::vector<GrowthPoint> growth_curve(const ModelSpec& m, const InferenceOptions& o,
                                      const GpuMemory& gpu);

// A change that makes a plan fit, with the figures it gives.
struct Suggestion {
  std::string change;  // "fp8 KV cache (--kv-dtype fp8)"
  InferenceOptions options;
  InferenceMemory memory;
};
// Changes tried in order: fp8 KV, lower concurrency, shorter context, fp8/int4 weights, more
// GPUs (tensor parallel up to `gpus_available`). Only those that fit are returned.
std::vector<Suggestion> suggest_inference(const ModelSpec& m, const InferenceOptions& o,
                                          const GpuMemory& gpu, int gpus_available);

// The smallest tensor-parallel size (1, 2, 4, 8, then pipeline stages of 8) up to
// `gpus_available` that fits; nullopt when none does.
std::optional<InferenceOptions> smallest_fit(const ModelSpec& m, const InferenceOptions& o,
                                             const GpuMemory& gpu, int gpus_available);

}  // namespace cardiac::plan
