// SPDX-License-Identifier: Apache-2.0
// Inference servers that take most of a GPU's memory at start by design: vLLM and SGLang
// reserve `gpu_memory_utilization` / `mem_fraction_static` of it for their KV cache, and
// TensorRT-LLM a fraction of what is free after loading. A full GPU under one of them is the
// cache, not exhaustion, and a flat level after start is not a leak.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "serving/vram_trend.h"

namespace cardiac::serving {

struct EngineGuess {
  std::string engine;  // "vLLM", "SGLang", "TensorRT-LLM", "TGI"
  std::string why;     // what gave it away: "command line names vllm.entrypoints"
  // The fraction it was told to reserve, when the command line says (--gpu-memory-utilization
  // 0.9, --mem-fraction-static 0.85, --kv_cache_free_gpu_memory_fraction 0.9).
  std::optional<double> memory_fraction;
};

// From /proc/<pid>/comm and the command line (NULs already turned into spaces). Unset for
// anything else, including a plain "python3" with no engine on its command line.
std::optional<EngineGuess> recognise_engine(std::string_view comm, std::string_view cmdline);

// The flat high level that preallocation gives: since the first point, the process's memory
// moved by less than `tolerance` of its level, and that level is at least `min_fraction` of
// the GPU. A growing or low series is not preallocation.
bool flat_and_high(const Series& points, double gpu_total_bytes, double min_fraction = 0.5,
                   double tolerance = 0.02);

// /proc/<pid>/cmdline's NUL-separated arguments as one line, cut at `limit` characters.
std::string cmdline_text(std::string_view raw, std::size_t limit = 512);

}  // namespace cardiac::serving
