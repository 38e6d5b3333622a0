// SPDX-License-Identifier: Apache-2.0
#include "cli/plan_output.h"

#include <cmath>
#include <filesystem>

#include <fmt/ranges.h>

#include "core/format.h"

namespace cardiac::cli::planning {

Result<plan::ModelSpec> resolve_model(const std::string& model) {
  if (auto p = plan::find_preset(model)) return *p;
  std::error_code ec;
  std::string path = model;
  if (std::filesystem::is_directory(path, ec)) path += "/config.json";
  if (!std::filesystem::exists(path, ec)) {
    return fail(Error::not_found(fmt::format("not a preset ({}) nor a config.json file",
                                             fmt::join(plan::preset_names(), ", ")),
                                 "--model " + model));
  }
  return plan::load_hf_config(path);
}

namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * kKiB;
constexpr double kGiB = 1024.0 * kMiB;

}  // namespace

std::int64_t whole(double bytes) {
  return std::llround(bytes);
}

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string bytes_text(double b) {
  if (b < 0) return "-" + bytes_text(-b);
  if (b >= kGiB) return fmt::format("{:.1f} GiB", b / kGiB);
  if (b >= kMiB) return fmt::format("{:.0f} MiB", b / kMiB);
  return fmt::format("{:.0f} KiB", b / kKiB);
}

nlohmann::json gpus_json(const Gpus& g) {
  return {{"source", g.source},
          {"count", g.count},
          {"name", g.tightest.name},
          {"total_bytes", g.tightest.total},
          {"free_bytes", g.tightest.free}};
}

nlohmann::json model_json(const plan::ModelSpec& m) {
  return {{"name", m.name},
          {"parameters", plan::parameter_count(m)},
          {"active_parameters", plan::active_parameter_count(m)},
          {"layers", m.layers},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"head_dim", m.head_dim},
          {"mla", m.mla()},
          {"experts", m.experts},
          {"max_context", m.max_context}};
}

std::string model_line(const plan::ModelSpec& m) {
  std::string attention =
      m.mla() ? fmt::format("MLA, {} + {} cached per layer", m.kv_latent, m.rope_dim)
      : m.kv_heads == m.heads ? std::string("MHA")
                              : fmt::format("GQA, {} KV of {} heads", m.kv_heads, m.heads);
  std::string size = fmt::format("{:.2f} B parameters", plan::parameter_count(m) / 1e9);
  if (m.moe()) {
    size += fmt::format(" ({:.1f} B active, {} experts)", plan::active_parameter_count(m) / 1e9,
                        m.experts);
  }
  return fmt::format("{}: {}, {} layers, {}", m.name, size, m.layers, attention);
}

std::string gpus_line(const Gpus& g) {
  if (g.source == "spec") {
    return fmt::format("{} × {} ({})", g.count, g.tightest.name,
                       bytes_text(static_cast<double>(g.tightest.total)));
  }
  return fmt::format("{} × {} (this machine: {} total, {} free on the fullest)", g.count,
                     g.tightest.name, bytes_text(static_cast<double>(g.tightest.total)),
                     bytes_text(static_cast<double>(g.tightest.free)));
}

}  // namespace cardiac::cli::planning
