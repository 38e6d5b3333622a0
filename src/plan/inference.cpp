// SPDX-License-Identifier: Apache-2.0
#include "plan/inference.h"

#include <algorithm>
#include <cmath>

#include "core/format.h"

namespace cardiac::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The CUDA context, cuBLAS workspaces and allocator slack every engine process carries; NCCL
// adds its buffers as soon as the model spans more than one GPU. Estimates: vLLM logs its
// "non-torch memory" at about this size on a single GPU.
constexpr double kNonTorchBase = 0.5 * kGiB;
constexpr double kNonTorchNccl = 0.5 * kGiB;
// Activations of the profile pass are held in 16-bit whatever the weights' dtype.
constexpr double kActivationBytes = 2.0;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

bool sixteen_bit_or_more(DType d) {
  return dtype_bytes(d) >= 2.0;
}

}  // namespace

double dtype_bytes(DType d) {
  switch (d) {
    case DType::kFp32:
      return 4.0;
    case DType::kBf16:
    case DType::kFp16:
      return 2.0;
    case DType::kFp8:
    case DType::kInt8:
      return 1.0;
    case DType::kInt4:
      return 0.5;
  }
  return 2.0;
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kInt8:
      return "int8";
    case DType::kInt4:
      return "int4";
  }
  return "bf16";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType d :
       {DType::kFp32, DType::kBf16, DType::kFp16, DType::kFp8, DType::kInt8, DType::kInt4}) {
    if (dtype_name(d) == name) return d;
  }
  if (name == "bfloat16") return DType::kBf16;
  if (name == "float16") return DType::kFp16;
  if (name == "float32") return DType::kFp32;
  return std::nullopt;
}

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::kVllm:
      return "vllm";
    case Engine::kSglang:
      return "sglang";
    case Engine::kTrtllm:
      return "trtllm";
  }
  return "vllm";
}

std::optional<Engine> parse_engine(std::string_view name) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    if (engine_name(e) == name) return e;
  }
  return std::nullopt;
}

double default_memory_fraction(Engine e) {
  switch (e) {
    case Engine::kVllm:
      return 0.92;
    case Engine::kSglang:
      return 0.88;
    case Engine::kTrtllm:
      return 0.9;
  }
  return 0.9;
}

double kv_bytes_per_token(const ModelSpec& m, DType kv) {
  const double b = dtype_bytes(kv);
  if (m.mla()) return static_cast<double>(m.kv_latent + m.rope_dim) * m.layers * b;
  return 2.0 * m.layers * m.kv_heads * m.head_dim * b;
}

double activation_peak_bytes(const ModelSpec& m, const InferenceOptions& o) {
  // The profile pass runs max_batched_tokens through one layer at a time: the residual stream,
  // q/k/v and attention output (about 4 × hidden) and the MLP's gate and up projections
  // (2 × intermediate, split over tensor-parallel ranks); then logits for every sequence in
  // fp32.
  double inter = m.intermediate;
  if (m.moe()) {
    const int per_expert = m.expert_intermediate > 0 ? m.expert_intermediate : m.intermediate;
    inter = std::max<double>(
        inter, static_cast<double>(per_expert) * (m.active_experts + m.shared_experts));
  }
  const double per_token = 4.0 * m.hidden + 2.0 * inter / o.tp;
  const auto tokens = static_cast<double>(o.max_batched_tokens);
  const double logits = static_cast<double>(o.max_seqs) * static_cast<double>(m.vocab) * 4.0;
  return tokens * per_token * kActivationBytes + logits / o.tp;
}

double non_torch_bytes(const InferenceOptions& o) {
  return kNonTorchBase + (o.tp * o.pp > 1 ? kNonTorchNccl : 0.0);
}

InferenceMemory plan_inference(const ModelSpec& m, const InferenceOptions& o,
                               const GpuMemory& gpu) {
  InferenceMemory r;
  const int gpus = o.tp * o.pp;
  const double fraction = o.memory_fraction.value_or(default_memory_fraction(o.engine));
  const auto total = static_cast<double>(gpu.total);
  const auto free = static_cast<double>(std::min(gpu.free, gpu.total));
  r.weights = static_cast<double>(parameter_count(m)) * dtype_bytes(o.weights) / gpus;
  r.activation_peak = activation_peak_bytes(m, o);
  r.non_torch = non_torch_bytes(o);
  r.other_processes = total - free;
  r.kv_per_token_model = kv_bytes_per_token(m, o.kv);
  const std::int64_t stage_layers = ceil_div(m.layers, o.pp);
  if (m.mla()) {
    // The latent is not split by heads: every tensor-parallel rank keeps all of it.
    r.kv_per_token =
        static_cast<double>(m.kv_latent + m.rope_dim) * stage_layers * dtype_bytes(o.kv);
  } else {
    // Ranks beyond the number of KV heads hold a copy of one head each.
    r.kv_per_token =
        2.0 * stage_layers * ceil_div(m.kv_heads, o.tp) * m.head_dim * dtype_bytes(o.kv);
  }
  const double fixed = r.weights + r.activation_peak + r.non_torch;
  if (o.engine == Engine::kTrtllm) {
    // TensorRT-LLM gives the KV cache a fraction of what is free once the engine is loaded.
    r.budget = free;
    r.kv_budget = fraction * (free - fixed);
  } else {
    // vLLM and SGLang take fraction × total and refuse to start when other processes leave
    // less than that free.
    r.budget = total * fraction;
    if (free < r.budget) {
      // The engine would start only with a fraction lowered to fit in what is free.
      r.fraction_limit = std::floor(free / total * 100.0) / 100.0;
      r.budget = total * *r.fraction_limit;
    }
    r.kv_budget = r.budget - fixed;
  }
  if (o.tp < 1 || o.pp < 1) {
    r.reason = "tensor and pipeline parallel sizes must be at least 1";
    return r;
  }
  if (m.heads % o.tp != 0) {
    r.reason =
        fmt::format("tensor parallel {} does not divide the {} attention heads", o.tp, m.heads);
    return r;
  }
  if (o.pp > m.layers) {
    r.reason = fmt::format("pipeline parallel {} exceeds the {} layers", o.pp, m.layers);
    return r;
  }
  if (r.kv_budget <= 0) {
    r.reason = fmt::format(
        "the weights ({:.1f} GiB per GPU) and runtime ({:.1f} GiB) leave no "
        "room for the KV cache in {:.1f} GiB",
        r.weights / kGiB, (r.activation_peak + r.non_torch) / kGiB, r.budget / kGiB);
    return r;
  }
  r.kv_tokens = static_cast<std::int64_t>(std::floor(r.kv_budget / r.kv_per_token));
  r.max_concurrency = o.context > 0 ? r.kv_tokens / o.context : 0;
  r.max_context = o.concurrency > 0 ? r.kv_tokens / o.concurrency : 0;
  if (m.max_context > 0) r.max_context = std::min(r.max_context, m.max_context);
  if (m.max_context > 0 && o.context > m.max_context) {
    r.reason = fmt::format("context {} exceeds the model's maximum of {} tokens", o.context,
                           m.max_context);
    return r;
  }
  if (r.max_concurrency < o.concurrency) {
    r.reason = fmt::format("the KV cache holds {} tokens: {} sequences of {} tokens, not {}",
                           r.kv_tokens, r.max_concurrency, o.context, o.concurrency);
    return r;
  }
  r.fits = true;
  return r;
}

std::vector<GrowthPoint> growth_curve(const ModelSpec& m, const InferenceOptions& o,
                                      const GpuMemory& gpu) {
  std::vector<GrowthPoint> points;
  const std::int64_t limit = m.max_context > 0 ? m.max_context : std::int64_t{1} << 20;
  std::vector<std::int64_t> contexts;
  for (std::int64_t c = 512; c <= limit; c *= 4) contexts.push_back(c);
  if (contexts.empty() || contexts.back() != limit) contexts.push_back(limit);
  for (std::int64_t c : contexts) {
    InferenceOptions at = o;
    at.context = c;
    InferenceMemory mem = plan_inference(m, at, gpu);
    GrowthPoint p;
    p.context = c;
    p.kv_per_sequence = mem.kv_per_token_model * static_cast<double>(c);
    p.max_concurrency = mem.max_concurrency;
    p.fits = mem.fits;
    points.push_back(p);
  }
  return points;
}

std::optional<InferenceOptions> smallest_fit(const ModelSpec& m, const InferenceOptions& o,
                                             const GpuMemory& gpu, int gpus_available) {
  std::vector<std::pair<int, int>> shapes;
  for (int tp : {1, 2, 4, 8}) shapes.emplace_back(tp, 1);
  for (int pp = 2; 8 * pp <= gpus_available; ++pp) shapes.emplace_back(8, pp);
  for (auto [tp, pp] : shapes) {
    if (tp * pp > gpus_available) continue;
    InferenceOptions at = o;
    at.tp = tp;
    at.pp = pp;
    if (plan_inference(m, at, gpu).fits) return at;
  }
  return std::nullopt;
}

std::vector<Suggestion> suggest_inference(const ModelSpec& m, const InferenceOptions& o,
                                          const GpuMemory& gpu, int gpus_available) {
  std::vector<Suggestion> out;
  // A change may fit only on more GPUs; that is worth saying when it needs fewer GPUs than
  // adding GPUs alone would.
  const auto wider_alone = smallest_fit(m, o, gpu, gpus_available);
  const int alone_gpus = wider_alone ? wider_alone->tp * wider_alone->pp : gpus_available + 1;
  auto consider = [&](const std::string& change, std::string flags, InferenceOptions at) {
    InferenceMemory mem = plan_inference(m, at, gpu);
    if (!mem.fits || at.tp * at.pp > gpus_available) {
      auto wider = smallest_fit(m, at, gpu, gpus_available);
      if (!wider || wider->tp * wider->pp >= alone_gpus) return false;
      at = *wider;
      mem = plan_inference(m, at, gpu);
      flags += fmt::format(" --tp {} --pp {}", at.tp, at.pp);
    }
    out.push_back({fmt::format("{} ({})", change, flags), at, mem});
    return true;
  };
  const InferenceMemory now = plan_inference(m, o, gpu);
  if (sixteen_bit_or_more(o.kv)) {
    InferenceOptions at = o;
    at.kv = DType::kFp8;
    consider("fp8 KV cache", "--kv-dtype fp8", at);
  }
  if (now.max_concurrency >= 1 && now.max_concurrency < o.concurrency) {
    InferenceOptions at = o;
    at.concurrency = now.max_concurrency;
    consider(fmt::format("lower concurrency to {}", now.max_concurrency),
             fmt::format("--concurrency {}", now.max_concurrency), at);
  }
  if (now.max_context >= 1 && now.max_context < o.context) {
    InferenceOptions at = o;
    at.context = now.max_context;
    consider(fmt::format("shorter context, {} tokens", now.max_context),
             fmt::format("--context {}", now.max_context), at);
  }
  for (DType w : {DType::kFp8, DType::kInt4}) {
    if (dtype_bytes(w) >= dtype_bytes(o.weights)) continue;
    InferenceOptions at = o;
    at.weights = w;
    if (consider(fmt::format("{} weights", dtype_name(w)), fmt::format("--dtype {}", dtype_name(w)),
                 at)) {
      break;
    }
  }
  if (wider_alone && wider_alone->tp * wider_alone->pp > o.tp * o.pp) {
    out.push_back({fmt::format("more GPUs: {} (--tp {} --pp {})", wider_alone->tp * wider_alone->pp,
                               wider_alone->tp, wider_alone->pp),
                   *wider_alone, plan_inference(m, *wider_alone, gpu)});
  }
  return out;
}

}  // namespace cardiac::plan
