// SPDX-License-Identifier: Apache-2.0
// What `cardiac plan`'s serving and training halves share: the flags, the GPUs planned on and
// the formatting of sizes, the model and the GPUs for text and JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "core/result.h"
#include "plan/inference.h"
#include "plan/model.h"

namespace cardiac::cli::planning {

// A preset name or a path to a config.json (or to the directory holding one); errors name
// --model.
Result<plan::ModelSpec> resolve_model(const std::string& model);

struct PlanFlags {
  std::string model;
  std::string dtype = "bf16";
  std::string kv_dtype = "bf16";
  std::string engine = "vllm";
  std::int64_t context = 2048;
  std::int64_t concurrency = 1;
  std::optional<double> memory_fraction;
  int tp = 0;  // 0: the smallest that fits
  int pp = 1;
  std::string gpu;
  int gpus = 0;  // with --gpu: how many (default 8)
  bool train = false;
  std::string optimizer = "adamw";
  std::string recompute = "selective";
  int zero = 0;
  int dp = 0;  // 0: the GPUs left after tp × pp
  std::int64_t seq_len = 4096;
  std::int64_t micro_batch = 1;
  bool json = false;
  std::string html;  // write the chart page here
  std::string nvml_lib;
  std::string timeout = "5s";
};

// The GPUs to plan on: the one with the least free memory decides for a group, since every
// GPU of a tensor-parallel group holds the same share.
struct Gpus {
  plan::GpuMemory tightest;
  int count = 0;
  std::string source;  // "spec" or "nvml"
};

// Byte counts in JSON are whole numbers.

// Byte counts in JSON are whole numbers.
std::int64_t whole(double bytes);
// 131072 → "131,072".
std::string with_commas(std::int64_t v);
// "7.5 GiB", "256 MiB", "128 KiB".
std::string bytes_text(double b);
nlohmann::json gpus_json(const Gpus& g);
nlohmann::json model_json(const plan::ModelSpec& m);
std::string model_line(const plan::ModelSpec& m);
std::string gpus_line(const Gpus& g);

// `cardiac plan --train` (cmd_plan_train.cpp).
int run_training(const PlanFlags& f, const plan::ModelSpec& m, const Gpus& gpus, Context& ctx);

}  // namespace cardiac::cli::planning
