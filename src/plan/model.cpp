// SPDX-License-Identifier: Apache-2.0
#include "plan/model.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/format.h"

namespace cardiac::plan {
namespace {

std::int64_t attention_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  if (m.mla()) {
    const std::int64_t qk = m.qk_nope_dim + m.rope_dim;
    std::int64_t q = m.q_latent > 0
                         ? h * m.q_latent + m.q_latent + std::int64_t{m.q_latent} * m.heads * qk
                         : h * m.heads * qk;
    std::int64_t kv = h * (m.kv_latent + m.rope_dim) + m.kv_latent +
                      std::int64_t{m.kv_latent} * m.heads * (m.qk_nope_dim + m.v_head_dim);
    std::int64_t o = std::int64_t{m.heads} * m.v_head_dim * h;
    return q + kv + o;
  }
  const std::int64_t q = std::int64_t{m.heads} * m.head_dim;
  const std::int64_t kv = std::int64_t{m.kv_heads} * m.head_dim;
  std::int64_t n = h * q + 2 * h * kv + q * h;
  if (m.qkv_bias) n += q + 2 * kv;
  return n;
}

// Gated MLP (gate, up, down).
std::int64_t mlp_params(std::int64_t hidden, std::int64_t inter) {
  return 3 * hidden * inter;
}

std::int64_t count(const ModelSpec& m, bool active_only) {
  const std::int64_t h = m.hidden;
  std::int64_t total = m.vocab * h * (m.tied_embeddings ? 1 : 2) + h;  // + final norm
  const std::int64_t expert_inter =
      m.expert_intermediate > 0 ? m.expert_intermediate : m.intermediate;
  for (int layer = 0; layer < m.layers; ++layer) {
    total += attention_params(m) + 2 * h;  // two norms
    if (!m.moe() || layer < m.dense_layers) {
      total += mlp_params(h, m.intermediate);
      continue;
    }
    const int routed = active_only ? m.active_experts : m.experts;
    total += (routed + m.shared_experts) * mlp_params(h, expert_inter);
    total += h * m.experts;  // router
  }
  return total;
}

ModelSpec llama(std::string name, int layers, int hidden, int heads, int inter) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.intermediate = inter;
  m.vocab = 128256;
  m.max_context = 131072;
  return m;
}

ModelSpec qwen(std::string name, int layers, int hidden, int heads, int kv_heads, int inter) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.intermediate = inter;
  m.vocab = 152064;
  m.qkv_bias = true;
  m.max_context = 32768;
  return m;
}

std::vector<ModelSpec> make_presets() {
  std::vector<ModelSpec> p;
  p.push_back(llama("Llama-3.1-8B", 32, 4096, 32, 14336));
  p.push_back(llama("Llama-3.1-70B", 80, 8192, 64, 28672));
  p.push_back(llama("Llama-3.1-405B", 126, 16384, 128, 53248));
  p.push_back(qwen("Qwen2.5-7B", 28, 3584, 28, 4, 18944));
  p.push_back(qwen("Qwen2.5-72B", 80, 8192, 64, 8, 29568));
  ModelSpec mixtral;
  mixtral.name = "Mixtral-8x7B";
  mixtral.layers = 32;
  mixtral.hidden = 4096;
  mixtral.heads = 32;
  mixtral.kv_heads = 8;
  mixtral.head_dim = 128;
  mixtral.intermediate = 14336;
  mixtral.vocab = 32000;
  mixtral.max_context = 32768;
  mixtral.experts = 8;
  mixtral.active_experts = 2;
  p.push_back(mixtral);
  ModelSpec ds;
  ds.name = "DeepSeek-V3";
  ds.layers = 61;
  ds.hidden = 7168;
  ds.heads = 128;
  ds.kv_heads = 128;
  ds.head_dim = 128;
  ds.intermediate = 18432;
  ds.vocab = 129280;
  ds.max_context = 163840;
  ds.kv_latent = 512;
  ds.q_latent = 1536;
  ds.rope_dim = 64;
  ds.qk_nope_dim = 128;
  ds.v_head_dim = 128;
  ds.experts = 256;
  ds.active_experts = 8;
  ds.shared_experts = 1;
  ds.expert_intermediate = 2048;
  ds.dense_layers = 3;
  p.push_back(ds);
  return p;
}

const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> kPresets = make_presets();
  return kPresets;
}

std::string lower(std::string_view s) {
  std::string r(s);
  std::ranges::transform(r, r.begin(), [](unsigned char c) { return std::tolower(c); });
  return r;
}

Error field_error(const std::string& path, const std::string& field, const std::string& why) {
  return Error::parse(fmt::format("field \"{}\": {}", field, why), path);
}

// An integer field; `fallback` when absent (nullopt: the field is required).
Result<std::int64_t> int_field(const nlohmann::json& j, const std::string& path,
                               const std::string& field, std::optional<std::int64_t> fallback) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return fail(field_error(path, field, "missing (a Hugging Face config.json has it)"));
  }
  if (!it->is_number_integer()) {
    return fail(field_error(path, field, "not an integer: " + it->dump()));
  }
  auto v = it->get<std::int64_t>();
  if (v < 0) return fail(field_error(path, field, "negative: " + it->dump()));
  return v;
}

// A text field that only names things; anything but a string is as good as absent (nlohmann's
// value() would throw on a number where a string was expected).
std::string text_or_empty(const nlohmann::json& j, const char* field) {
  auto it = j.find(field);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::int64_t parameter_count(const ModelSpec& m) {
  return count(m, false);
}

std::int64_t active_parameter_count(const ModelSpec& m) {
  return count(m, true);
}

std::optional<ModelSpec> find_preset(std::string_view name) {
  const std::string want = lower(name);
  for (const auto& p : presets()) {
    if (lower(p.name) == want) return p;
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

Status validate(const ModelSpec& m, const std::string& where) {
  auto bad = [&](const char* field, const std::string& why) {
    return fail(Error::invalid(fmt::format("{}: {}", field, why), where));
  };
  if (m.layers <= 0) return bad("num_hidden_layers", "must be positive");
  if (m.hidden <= 0) return bad("hidden_size", "must be positive");
  if (m.heads <= 0) return bad("num_attention_heads", "must be positive");
  if (m.kv_heads <= 0) return bad("num_key_value_heads", "must be positive");
  if (m.heads % m.kv_heads != 0) {
    return bad("num_key_value_heads",
               fmt::format("{} does not divide num_attention_heads {}", m.kv_heads, m.heads));
  }
  if (m.head_dim <= 0) return bad("head_dim", "must be positive");
  if (m.intermediate <= 0 && !m.moe()) return bad("intermediate_size", "must be positive");
  if (m.vocab <= 0) return bad("vocab_size", "must be positive");
  if (m.moe() && (m.active_experts <= 0 || m.active_experts > m.experts)) {
    return bad("num_experts_per_tok",
               fmt::format("must be between 1 and the {} experts", m.experts));
  }
  return {};
}

Result<ModelSpec> parse_hf_config(std::string_view text, const std::string& path) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail(Error::parse("not valid JSON", path));
  if (!j.is_object()) return fail(Error::parse("not a JSON object", path));
  // Multimodal configs nest the language model's shape.
  if (j.contains("text_config") && j["text_config"].is_object() &&
      !j.contains("num_hidden_layers")) {
    j = j["text_config"];
  }
  ModelSpec m;
  m.name = text_or_empty(j, "_name_or_path");
  if (m.name.empty() && j.contains("architectures") && j["architectures"].is_array() &&
      !j["architectures"].empty() && j["architectures"][0].is_string()) {
    m.name = j["architectures"][0].get<std::string>();
  }
  if (m.name.empty()) m.name = path;
  auto get = [&](const char* field, std::optional<std::int64_t> fallback) {
    return int_field(j, path, field, fallback);
  };
  auto layers = get("num_hidden_layers", std::nullopt);
  if (!layers) return fail(layers.error());
  auto hidden = get("hidden_size", std::nullopt);
  if (!hidden) return fail(hidden.error());
  auto heads = get("num_attention_heads", std::nullopt);
  if (!heads) return fail(heads.error());
  if (*heads == 0) return fail(field_error(path, "num_attention_heads", "must be positive"));
  auto kv_heads = get("num_key_value_heads", *heads);
  if (!kv_heads) return fail(kv_heads.error());
  auto head_dim = get("head_dim", *hidden / *heads);
  if (!head_dim) return fail(head_dim.error());
  auto vocab = get("vocab_size", std::nullopt);
  if (!vocab) return fail(vocab.error());
  auto max_pos = get("max_position_embeddings", 0);
  if (!max_pos) return fail(max_pos.error());
  // MoE configs name their expert count three ways (Mixtral, DeepSeek, Qwen-MoE).
  auto experts = get("num_local_experts", 0);
  if (!experts) return fail(experts.error());
  for (const char* alt : {"n_routed_experts", "num_experts"}) {
    if (*experts != 0) break;
    experts = get(alt, 0);
    if (!experts) return fail(experts.error());
  }
  auto active = get("num_experts_per_tok", 0);
  if (!active) return fail(active.error());
  auto moe_inter = get("moe_intermediate_size", 0);
  if (!moe_inter) return fail(moe_inter.error());
  auto inter =
      get("intermediate_size", *moe_inter > 0 ? std::optional<std::int64_t>(0) : std::nullopt);
  if (!inter) return fail(inter.error());
  auto shared = get("n_shared_experts", 0);
  if (!shared) return fail(shared.error());
  auto dense = get("first_k_dense_replace", 0);
  if (!dense) return fail(dense.error());
  auto kv_latent = get("kv_lora_rank", 0);
  if (!kv_latent) return fail(kv_latent.error());
  auto q_latent = get("q_lora_rank", 0);
  if (!q_latent) return fail(q_latent.error());
  auto rope = get("qk_rope_head_dim", 0);
  if (!rope) return fail(rope.error());
  auto nope = get("qk_nope_head_dim", 0);
  if (!nope) return fail(nope.error());
  auto v_dim = get("v_head_dim", 0);
  if (!v_dim) return fail(v_dim.error());
  auto tied = j.find("tie_word_embeddings");
  if (tied != j.end() && !tied->is_boolean()) {
    return fail(field_error(path, "tie_word_embeddings", "not true or false: " + tied->dump()));
  }
  m.tied_embeddings = tied != j.end() && tied->get<bool>();
  const std::string type = text_or_empty(j, "model_type");
  auto bias = j.find("attention_bias");
  if (bias != j.end() && !bias->is_boolean()) {
    return fail(field_error(path, "attention_bias", "not true or false: " + bias->dump()));
  }
  m.qkv_bias = (bias != j.end() && bias->get<bool>()) || type == "qwen2" || type == "qwen2_moe";

  m.layers = static_cast<int>(*layers);
  m.hidden = static_cast<int>(*hidden);
  m.heads = static_cast<int>(*heads);
  m.kv_heads = static_cast<int>(*kv_heads);
  m.head_dim = static_cast<int>(*head_dim);
  m.intermediate = static_cast<int>(*inter);
  m.vocab = *vocab;
  m.max_context = *max_pos;
  m.experts = static_cast<int>(*experts);
  m.active_experts = static_cast<int>(*active);
  m.shared_experts = static_cast<int>(*shared);
  m.expert_intermediate = static_cast<int>(*moe_inter);
  m.dense_layers = static_cast<int>(*dense);
  m.kv_latent = static_cast<int>(*kv_latent);
  m.q_latent = static_cast<int>(*q_latent);
  m.rope_dim = static_cast<int>(*rope);
  m.qk_nope_dim = static_cast<int>(*nope);
  m.v_head_dim = static_cast<int>(*v_dim);
  CARDIAC_TRY(validate(m, path));
  return m;
}

Result<ModelSpec> load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(Error::io(path, errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_hf_config(ss.str(), path);
}

}  // namespace cardiac::plan
