// SPDX-License-Identifier: Apache-2.0
// A vLLM /metrics answer shaped like a real one (v0.6-style names, one model, a histogram),
// with the figures the tests change filled in.
#pragma once

#include <string>

#include <fmt/format.h>

namespace cardiac::serving::testing {

inline std::string vllm_metrics(double cache_usage, int waiting, int running, int preemptions) {
  return fmt::format(
      R"(# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{model_name="meta-llama/Llama-3.1-8B-Instruct"}} {running}.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{model_name="meta-llama/Llama-3.1-8B-Instruct"}} {waiting}.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{{model_name="meta-llama/Llama-3.1-8B-Instruct"}} {cache}
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{{model_name="meta-llama/Llama-3.1-8B-Instruct"}} {preempt}.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"}} 0.0
vllm:time_to_first_token_seconds_bucket{{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"}} 1523.0
vllm:time_to_first_token_seconds_count{{model_name="meta-llama/Llama-3.1-8B-Instruct"}} 1523.0
vllm:time_to_first_token_seconds_sum{{model_name="meta-llama/Llama-3.1-8B-Instruct"}} 312.75
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 2.147483648e+09
)",
      fmt::arg("running", running), fmt::arg("waiting", waiting), fmt::arg("cache", cache_usage),
      fmt::arg("preempt", preemptions));
}

}  // namespace cardiac::serving::testing
