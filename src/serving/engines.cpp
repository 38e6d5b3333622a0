// SPDX-License-Identifier: Apache-2.0
#include "serving/engines.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace cardiac::serving {
namespace {

bool has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

// The number after `flag` ("--gpu-memory-utilization 0.9" or "…=0.9"), when it is one.
std::optional<double> flag_value(std::string_view cmdline, std::string_view flag) {
  auto at = cmdline.find(flag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = cmdline.substr(at + flag.size());
  if (rest.empty() || (rest.front() != ' ' && rest.front() != '=')) return std::nullopt;
  rest.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  if (ec != std::errc() || end == rest.data() || v <= 0 || v > 1) return std::nullopt;
  return v;
}

struct Pattern {
  std::string_view engine;
  std::array<std::string_view, 4> needles;  // in the command line (or comm)
  std::array<std::string_view, 2> fraction_flags;
};

constexpr std::array kPatterns = {
    Pattern{"vLLM",
            {"vllm.entrypoints", "vllm serve", "/vllm ", "VLLM::"},
            {"--gpu-memory-utilization", "--gpu_memory_utilization"}},
    Pattern{"SGLang",
            {"sglang.launch_server", "sglang serve", "sglang::", "sglang.srt"},
            {"--mem-fraction-static", "--mem_fraction_static"}},
    Pattern{"TensorRT-LLM",
            {"trtllm-serve", "tensorrt_llm", "tritonserver", "trtllm"},
            {"--kv_cache_free_gpu_memory_fraction", "--kv-cache-free-gpu-memory-fraction"}},
    Pattern{"TGI", {"text-generation-launcher", "text-generation-server", "", ""}, {"", ""}},
};

}  // namespace

std::optional<EngineGuess> recognise_engine(std::string_view comm, std::string_view cmdline) {
  for (const auto& p : kPatterns) {
    for (std::string_view needle : p.needles) {
      if (needle.empty()) continue;
      const bool in_cmd = has(cmdline, needle);
      // vLLM's engine core and workers rename themselves ("VLLM::EngineCore"): comm says it.
      const bool in_comm = has(comm, needle) || (p.engine == "vLLM" && comm.starts_with("VLLM"));
      if (!in_cmd && !in_comm) continue;
      EngineGuess g;
      g.engine = std::string(p.engine);
      g.why = in_cmd ? "its command line names " + std::string(needle)
                     : "its process name is " + std::string(comm);
      for (std::string_view flag : p.fraction_flags) {
        if (flag.empty()) continue;
        if (auto v = flag_value(cmdline, flag)) {
          g.memory_fraction = v;
          break;
        }
      }
      return g;
    }
  }
  return std::nullopt;
}

bool flat_and_high(const Series& points, double gpu_total_bytes, double min_fraction,
                   double tolerance) {
  if (points.empty() || gpu_total_bytes <= 0) return false;
  auto [lo, hi] =
      std::minmax_element(points.begin(), points.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
  if (points.back().second < min_fraction * gpu_total_bytes) return false;
  return hi->second - lo->second <= tolerance * hi->second;
}

std::string cmdline_text(std::string_view raw, std::size_t limit) {
  std::string out;
  out.reserve(std::min(raw.size(), limit));
  for (char c : raw) {
    if (out.size() >= limit) break;
    out += (c == '\0' || std::iscntrl(static_cast<unsigned char>(c)) != 0) ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace cardiac::serving
