// SPDX-License-Identifier: Apache-2.0
// A transformer's shape, as much of it as memory planning needs: parameter counts, the presets
// for well-known models and a reader for a local Hugging Face config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cardiac::plan {

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // GQA: fewer than heads; MHA: equal; MQA: 1
  int head_dim = 0;  // per head (q, k and v) unless MLA below says otherwise
  int intermediate = 0;
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  bool qkv_bias = false;  // Qwen2 carries a bias on q, k and v
  std::int64_t max_context = 0;

  // Multi-head latent attention (DeepSeek-V2/V3): the cache holds one latent per token and
  // layer instead of keys and values per head. kv_latent == 0 means ordinary attention.
  int kv_latent = 0;    // kv_lora_rank
  int q_latent = 0;     // q_lora_rank (0: q projected straight from hidden)
  int rope_dim = 0;     // qk_rope_head_dim
  int qk_nope_dim = 0;  // qk_nope_head_dim
  int v_head_dim = 0;

  // Mixture of experts: experts == 0 means a dense MLP.
  int experts = 0;
  int active_experts = 0;
  int shared_experts = 0;
  int expert_intermediate = 0;  // 0: the same as intermediate
  int dense_layers = 0;         // first layers that keep a dense MLP (DeepSeek's first_k_dense)

  [[nodiscard]] bool mla() const { return kv_latent > 0; }
  [[nodiscard]] bool moe() const { return experts > 0; }
};

// Every weight the model stores (embeddings, attention, MLP or experts, norms, head).
std::int64_t parameter_count(const ModelSpec& m);
// The weights one token passes through: all but the experts it is not routed to.
std::int64_t active_parameter_count(const ModelSpec& m);

// Case-insensitive preset lookup ("llama-3.1-8b", "Qwen2.5-72B", "deepseek-v3", …).
std::optional<ModelSpec> find_preset(std::string_view name);
std::vector<std::string> preset_names();

// Reads a Hugging Face config.json from disk (never the network). Errors name the file and
// the field.
Result<ModelSpec> parse_hf_config(std::string_view text, const std::string& path);
Result<ModelSpec> load_hf_config(const std::string& path);

// Checks that the shape makes sense (positive sizes, kv_heads dividing heads, …).
Status validate(const ModelSpec& m, const std::string& where);

}  // namespace cardiac::plan
