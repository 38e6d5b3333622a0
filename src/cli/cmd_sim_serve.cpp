// SPDX-License-Identifier: Apache-2.0
// `cardiac sim serve`: an inference server on N GPUs under static or continuous batching with
// reserved or paged KV cache, from a Poisson workload or a trace (src/simserve,
// docs/sim-serve.md). The model, the KV budget and the GPU's figures come from src/plan.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/plan_output.h"
#include "core/format.h"
#include "core/strings.h"
#include "core/text.h"
#include "plan/gpus.h"
#include "plan/inference.h"
#include "simserve/engine.h"
#include "simserve/report.h"

namespace cardiac::cli {
namespace {

struct ServeFlags {
  std::string model = "Llama-3.1-8B";
  std::string gpu = "H100-80GB";
  int gpus = 1;
  int tp = 1;
  std::string dtype = "bf16";
  std::string kv_dtype = "bf16";
  std::optional<double> memory_fraction;
  std::optional<std::int64_t> kv_tokens;
  double rate = 10;
  double requests = 1000;  // a double so that 1e6 reads
  std::string prompt_len = "lognormal:512:8192";
  std::string output_len = "lognormal:200:2048";
  std::uint64_t seed = 1;
  std::string trace;
  std::string policy = "continuous-paged";
  bool compare = false;
  std::int64_t max_batch = 256;
  std::int64_t max_batched_tokens = 2048;
  bool no_chunked = false;
  std::string batch_timeout = "50ms";
  std::int64_t max_seq_len = 0;
  std::int64_t block_size = 16;
  double compute_eff = 0.6;
  double bandwidth_eff = 0.8;
  std::vector<std::string> classes;
  bool json = false;
  std::string html;
  bool quiet = false;
};

struct Prepared {
  simserve::EngineConfig base;
  std::vector<simserve::Policy> policies;
  std::vector<simserve::Request> requests;
  nlohmann::json setup;
  std::string headline;
};

Result<Prepared> prepare(const ServeFlags& f) {
  auto bad = [](std::string why, std::string where) {
    return fail(Error::invalid(std::move(why), std::move(where)));
  };
  Prepared p;
  auto model = planning::resolve_model(f.model);
  if (!model) return fail(model.error());
  auto gpu = plan::find_gpu_perf(f.gpu);
  if (!gpu) {
    return bad(fmt::format("unknown GPU; known: {}", fmt::join(plan::gpu_names(), ", ")),
               "--gpu " + f.gpu);
  }
  auto weights = plan::parse_dtype(f.dtype);
  if (!weights) return bad("expected bf16, fp16, fp8, int8 or int4", "--dtype " + f.dtype);
  auto kv = plan::parse_dtype(f.kv_dtype);
  if (!kv) return bad("expected bf16, fp16, fp8 or int8", "--kv-dtype " + f.kv_dtype);
  if (f.tp < 1 || f.gpus < 1 || f.gpus % f.tp != 0) {
    return bad(fmt::format("--gpus {} must be a positive multiple of --tp {}", f.gpus, f.tp),
               "--gpus");
  }
  if (!(f.compute_eff > 0 && f.compute_eff <= 1)) {
    return bad("a share in (0, 1]", fmt::format("--compute-efficiency {:g}", f.compute_eff));
  }
  if (!(f.bandwidth_eff > 0 && f.bandwidth_eff <= 1)) {
    return bad("a share in (0, 1]", fmt::format("--bandwidth-efficiency {:g}", f.bandwidth_eff));
  }
  auto timeout = parse_duration_ns(f.batch_timeout);
  if (!timeout || *timeout < 0) {
    return bad("expected a duration like 50ms", "--batch-timeout " + f.batch_timeout);
  }
  if (!f.classes.empty()) {
    p.base.classes.clear();
    for (const std::string& c : f.classes) {
      auto cls = simserve::parse_class(c);
      if (!cls) return fail(cls.error());
      p.base.classes.push_back(*cls);
    }
  }
  if (f.compare) {
    p.policies = simserve::all_policies();
  } else {
    auto pol = simserve::parse_policy(f.policy);
    if (!pol) return fail(pol.error());
    p.policies = {*pol};
  }
  std::string workload;
  if (!f.trace.empty()) {
    auto t = simserve::load_trace(f.trace, p.base.classes, f.seed);
    if (!t) return fail(t.error());
    p.requests = std::move(*t);
    workload = fmt::format("trace {}", f.trace);
    p.setup["workload"] = {{"source", "trace"}, {"trace", f.trace}};
  } else {
    if (!(f.rate > 0) || !std::isfinite(f.rate)) {
      return bad("must be a positive number", fmt::format("--rate {:g}", f.rate));
    }
    // About 150 bytes a request while it runs: 1e8 is 15 GB.
    if (!(f.requests >= 1 && f.requests <= 1e8) || f.requests != std::floor(f.requests)) {
      return bad("a whole number from 1 to 1e8", fmt::format("--requests {:g}", f.requests));
    }
    auto prompt = simserve::parse_length(f.prompt_len, "--prompt-len");
    if (!prompt) return fail(prompt.error());
    auto output = simserve::parse_length(f.output_len, "--output-len");
    if (!output) return fail(output.error());
    simserve::PoissonWorkload w{f.rate, static_cast<std::uint64_t>(f.requests), *prompt, *output,
                                f.seed};
    p.requests = simserve::generate(w, p.base.classes);
    workload = fmt::format("Poisson {:g}/s, prompt {}, output {}", f.rate, prompt->describe(),
                           output->describe());
    p.setup["workload"] = {{"source", "poisson"},
                           {"rate", f.rate},
                           {"prompt", prompt->describe()},
                           {"output", output->describe()},
                           {"seed", f.seed}};
  }
  std::int64_t longest = 0;
  for (const auto& r : p.requests) longest = std::max<std::int64_t>(longest, r.prompt + r.output);
  const std::int64_t seq = f.max_seq_len > 0 ? f.max_seq_len : longest;
  // The KV budget as vLLM would size it on these GPUs (cardiac plan's rule).
  plan::InferenceOptions o;
  o.weights = *weights;
  o.kv = *kv;
  o.tp = f.tp;
  o.context = seq;
  o.memory_fraction = f.memory_fraction;
  const plan::GpuMemory mem{gpu->name, gpu->memory, gpu->memory};
  const plan::InferenceMemory im = plan::plan_inference(*model, o, mem);
  if (f.kv_tokens && *f.kv_tokens < f.block_size) {
    return bad(fmt::format("must hold at least one block ({} tokens)", f.block_size),
               "--kv-tokens " + std::to_string(*f.kv_tokens));
  }
  const std::int64_t kv_tokens = f.kv_tokens.value_or(im.kv_tokens);
  if (kv_tokens < f.block_size) {
    return bad(fmt::format("{} on {} × {} leaves no room for the KV cache ({:.1f} GiB of weights "
                           "per GPU); use more GPUs per replica (--tp) or smaller --dtype",
                           model->name, f.tp, gpu->name, im.weights / (1024.0 * 1024 * 1024)),
               "--tp " + std::to_string(f.tp));
  }
  if (f.max_seq_len < 0) return bad("must not be negative", "--max-seq-len");
  if (f.block_size < 1) return bad("must be at least 1", "--block-size");
  auto& c = p.base;
  c.cost = simserve::make_cost_model(*model, *weights, *kv, *gpu, f.tp,
                                     {.compute = f.compute_eff, .bandwidth = f.bandwidth_eff});
  c.replicas = f.gpus / f.tp;
  c.gpus_per_replica = f.tp;
  c.kv_tokens = kv_tokens;
  c.max_batch = f.max_batch;
  c.max_batched_tokens = f.max_batched_tokens;
  c.chunked_prefill = !f.no_chunked;
  c.batch_timeout_s = static_cast<double>(*timeout) / 1e9;
  c.max_seq_len = f.max_seq_len;
  c.block_tokens = f.block_size;
  p.headline = fmt::format(
      "{} on {} × {} ({} replica{} of tp {}), KV cache {} tokens per replica; {} requests, {}",
      model->name, f.gpus, gpu->name, c.replicas, c.replicas == 1 ? "" : "s", f.tp, kv_tokens,
      p.requests.size(), workload);
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& cl : c.classes) {
    classes.push_back({{"name", cl.name},
                       {"share", cl.share},
                       {"ttft_s", cl.ttft_s ? nlohmann::json(*cl.ttft_s) : nlohmann::json()},
                       {"tpot_s", cl.tpot_s ? nlohmann::json(*cl.tpot_s) : nlohmann::json()}});
  }
  p.setup["model"] = model->name;
  p.setup["parameters"] = plan::parameter_count(*model);
  p.setup["active_parameters"] = plan::active_parameter_count(*model);
  p.setup["gpu"] = gpu->name;
  p.setup["gpu_bf16_flops"] = gpu->bf16_flops;
  p.setup["gpu_hbm_bytes_per_s"] = gpu->hbm_bytes_per_s;
  p.setup["gpus"] = f.gpus;
  p.setup["tp"] = f.tp;
  p.setup["replicas"] = c.replicas;
  p.setup["weights_dtype"] = plan::dtype_name(*weights);
  p.setup["kv_dtype"] = plan::dtype_name(*kv);
  p.setup["kv_bytes_per_token"] = c.cost.kv_bytes_per_token;
  p.setup["kv_tokens_per_replica"] = kv_tokens;
  p.setup["requests"] = p.requests.size();
  p.setup["max_batch"] = c.max_batch;
  p.setup["max_batched_tokens"] = c.max_batched_tokens;
  p.setup["chunked_prefill"] = c.chunked_prefill;
  p.setup["batch_timeout_s"] = c.batch_timeout_s;
  p.setup["max_seq_len"] = seq;
  p.setup["block_tokens"] = c.block_tokens;
  p.setup["compute_efficiency"] = f.compute_eff;
  p.setup["bandwidth_efficiency"] = f.bandwidth_eff;
  p.setup["classes"] = classes;
  return p;
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return fail(Error::io(path, errno));
  return {};
}

int run_serve(const ServeFlags& f, Context& ctx) {
  auto p = prepare(f);
  if (!p) {
    ctx.err << "cardiac sim serve: " << printable(p.error().what()) << "\n";
    return kExitUsage;
  }
  const std::size_t n = p->policies.size();
  const bool show = !f.quiet && isatty(STDERR_FILENO);
  if (!f.quiet) {
    ctx.err << fmt::format("cardiac sim serve: {} requests, {} polic{}\n", p->requests.size(), n,
                           n == 1 ? "y" : "ies");
  }
  std::vector<std::atomic<double>> done(n);
  for (auto& d : done) d = 0;
  std::mutex mu;
  std::vector<simserve::ServeResult> results(n);
  std::optional<Error> error;
  auto worker = [&](std::size_t i) {
    simserve::EngineConfig c = p->base;
    c.policy = p->policies[i];
    simserve::Progress progress = [&, i](double fr) {
      done[i] = fr;
      if (!show) return;
      double sum = 0;
      for (auto& d : done) sum += d.load();
      const int pc = static_cast<int>(100 * sum / static_cast<double>(n));
      std::lock_guard lock(mu);
      ctx.err << fmt::format("\r[{:<25}] {:3d} %",
                             std::string(static_cast<std::size_t>(pc / 4), '#'), pc)
              << std::flush;
    };
    auto r = simserve::simulate(c, p->requests, progress);
    std::lock_guard lock(mu);
    if (!r) {
      error = r.error();
      return;
    }
    results[i] = std::move(*r);
  };
  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < n; ++i) pool.emplace_back(worker, i);
  for (auto& t : pool) t.join();
  if (show) ctx.err << "\n";
  if (error) {
    ctx.err << "cardiac sim serve: " << error->what() << "\n";
    return kExitUsage;
  }
  if (!f.html.empty()) {
    if (auto w = write_file(f.html, simserve::render_html(results, p->setup, p->headline)); !w) {
      ctx.err << "cardiac sim serve: " << w.error().what() << "\n";
      return kExitCannotRun;
    }
  }
  if (f.json) {
    ctx.out << simserve::to_json(results, p->setup).dump(2) << "\n";
  } else {
    ctx.out << simserve::render_text(results, p->headline);
  }
  return kExitOk;
}

}  // namespace

Runner register_sim_serve(CLI::App& sub) {
  auto f = std::make_shared<ServeFlags>();
  sub.add_option("--model", f->model, "Model preset (Llama-3.1-8B, …) or a config.json")
      ->capture_default_str();
  sub.add_option("--gpu", f->gpu, "GPU from the spec table (H100-80GB, H200, A100-80GB, …)")
      ->capture_default_str();
  sub.add_option("--gpus", f->gpus, "GPUs in the server")->capture_default_str();
  sub.add_option("--tp", f->tp, "Tensor-parallel GPUs per replica (replicas = gpus / tp)")
      ->capture_default_str();
  sub.add_option("--dtype", f->dtype, "Weights: bf16, fp16, fp8, int8 or int4")
      ->capture_default_str();
  sub.add_option("--kv-dtype", f->kv_dtype, "KV cache: bf16, fp16, fp8 or int8")
      ->capture_default_str();
  sub.add_option("--gpu-memory-utilization", f->memory_fraction,
                 "Share of GPU memory the engine takes (vLLM's rule; default 0.92)");
  sub.add_option("--kv-tokens", f->kv_tokens,
                 "KV cache tokens per replica, instead of the budget from the GPU's memory");
  sub.add_option("--rate", f->rate, "Poisson arrivals per second")->capture_default_str();
  sub.add_option("--requests", f->requests, "Requests to generate")->capture_default_str();
  sub.add_option("--prompt-len", f->prompt_len,
                 "Prompt tokens: N, uniform:LO:HI or lognormal:MEAN:MAX[:SIGMA]")
      ->capture_default_str();
  sub.add_option("--output-len", f->output_len, "Output tokens, same forms as --prompt-len")
      ->capture_default_str();
  sub.add_option("--seed", f->seed, "Random seed of the workload")->capture_default_str();
  sub.add_option("--trace", f->trace,
                 "CSV of arrival_seconds,prompt_tokens,output_tokens[,class] instead of --rate");
  sub.add_option("--policy", f->policy,
                 "static-reserved, static-paged, continuous-reserved or continuous-paged")
      ->capture_default_str();
  sub.add_flag("--compare", f->compare, "Run all four policies side by side");
  sub.add_option("--max-batch", f->max_batch, "Requests in a batch at most")->capture_default_str();
  sub.add_option("--max-batched-tokens", f->max_batched_tokens,
                 "Prompt tokens per prefill step (the chunk budget, decode tokens included)")
      ->capture_default_str();
  sub.add_flag("--no-chunked-prefill", f->no_chunked,
               "Continuous: prefill whole prompts in their own steps (decodes wait)");
  sub.add_option("--batch-timeout", f->batch_timeout, "Static: the longest a batch waits to fill")
      ->capture_default_str();
  sub.add_option("--max-seq-len", f->max_seq_len,
                 "Tokens reserved per request (reserved KV); longer requests are rejected "
                 "(default: the longest request)");
  sub.add_option("--block-size", f->block_size, "Paged KV: tokens per block")
      ->capture_default_str();
  sub.add_option("--compute-efficiency", f->compute_eff, "Share of the datasheet FLOP/s reached")
      ->capture_default_str();
  sub.add_option("--bandwidth-efficiency", f->bandwidth_eff,
                 "Share of the datasheet HBM bandwidth reached")
      ->capture_default_str();
  sub.add_option("--class", f->classes,
                 "Priority class NAME:SHARE[:ttft=500ms][:tpot=50ms], highest first; repeat");
  sub.add_flag("--json", f->json, "JSON output (docs/sim-serve.md)");
  sub.add_option("--html", f->html, "Write an HTML page comparing the policies to this file");
  sub.add_flag("--quiet", f->quiet, "No progress on stderr");
  return [f](Context& ctx) { return run_serve(*f, ctx); };
}

}  // namespace cardiac::cli
