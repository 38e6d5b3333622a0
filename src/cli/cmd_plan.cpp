// SPDX-License-Identifier: Apache-2.0
// `cardiac plan`: will a model fit on these GPUs for serving (or training), on how many, and
// which change makes it fit. The GPUs are a spec-table entry (--gpu) or this machine's, from one
// NVML sample (total and free memory: what other processes hold is not ours to plan with).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plan_output.h"
#include "core/format.h"
#include "core/strings.h"
#include "plan/gpus.h"
#include "plan/html.h"
#include "plan/inference.h"
#include "plan/training.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::cli {
namespace {

using namespace planning;  // NOLINT(google-build-using-namespace): this command's own helpers

int usage(Context& ctx, const std::string& message) {
  ctx.err << "cardiac plan: " << message << "\n";
  return kExitUsage;
}

Result<Gpus> resolve_gpus(const PlanFlags& f, const Clock& clock) {
  Gpus g;
  if (!f.gpu.empty()) {
    auto spec = plan::find_gpu(f.gpu);
    if (!spec) {
      return fail(
          Error::invalid(fmt::format("unknown GPU; known: {}", fmt::join(plan::gpu_names(), ", ")),
                         "--gpu " + f.gpu));
    }
    g.tightest = *spec;
    g.count = f.gpus > 0 ? f.gpus : 8;
    g.source = "spec";
    return g;
  }
  auto timeout = parse_duration_ns(f.timeout);
  if (!timeout || *timeout <= 0) {
    return fail(Error::invalid("not a duration (e.g. 5s, 500ms)", "--timeout " + f.timeout));
  }
  telemetry::GpuCollectorOptions copts;
  copts.nvml_lib = f.nvml_lib;
  copts.timeout = *timeout;
  telemetry::GpuCollector collector(copts, clock);
  nvml::GpuSnapshot snap = collector.sample();
  if (!snap.available) {
    return fail(
        Error::unavailable(snap.error + " (or plan for a GPU model with --gpu H100-80GB)", "NVML"));
  }
  g.source = "nvml";
  for (const auto& r : snap.gpus) {
    if (!r.memory_total || !r.memory_free) continue;
    if (g.count == 0 || *r.memory_free < g.tightest.free) {
      g.tightest = plan::GpuMemory{r.name, *r.memory_total, *r.memory_free};
    }
    ++g.count;
  }
  if (g.count == 0) {
    return fail(Error::unavailable(
        "no GPU reported its memory (plan for a GPU model with --gpu H100-80GB)", "NVML"));
  }
  if (f.gpus > 0) g.count = std::min(g.count, f.gpus);
  return g;
}

nlohmann::json inference_json(const plan::InferenceOptions& o, const plan::InferenceMemory& r) {
  return {{"tp", o.tp},
          {"pp", o.pp},
          {"gpus", o.tp * o.pp},
          {"weights_dtype", plan::dtype_name(o.weights)},
          {"kv_dtype", plan::dtype_name(o.kv)},
          {"context", o.context},
          {"concurrency", o.concurrency},
          {"fits", r.fits},
          {"reason", r.reason},
          {"per_gpu",
           {{"budget_bytes", whole(r.budget)},
            {"weights_bytes", whole(r.weights)},
            {"activation_peak_bytes", whole(r.activation_peak)},
            {"non_torch_bytes", whole(r.non_torch)},
            {"other_processes_bytes", whole(r.other_processes)},
            {"kv_cache_bytes", whole(r.kv_budget)},
            {"kv_bytes_per_token", whole(r.kv_per_token)}}},
          {"kv_bytes_per_token", whole(r.kv_per_token_model)},
          {"kv_bytes_per_sequence", whole(r.kv_per_token_model * static_cast<double>(o.context))},
          {"kv_tokens", r.kv_tokens},
          {"max_concurrency", r.max_concurrency},
          {"max_context", r.max_context},
          {"memory_fraction_limit",
           r.fraction_limit ? nlohmann::json(*r.fraction_limit) : nlohmann::json()}};
}

int print_inference(std::ostream& out, const plan::ModelSpec& m, const Gpus& gpus,
                    const plan::InferenceOptions& o, const plan::InferenceMemory& r,
                    const std::vector<plan::GrowthPoint>& curve,
                    const std::vector<plan::Suggestion>& changes);

int run_inference(const PlanFlags& f, const plan::ModelSpec& m, const Gpus& gpus, Context& ctx) {
  plan::InferenceOptions o;
  o.weights = *plan::parse_dtype(f.dtype);
  o.kv = *plan::parse_dtype(f.kv_dtype);
  o.engine = *plan::parse_engine(f.engine);
  o.memory_fraction = f.memory_fraction;
  o.context = f.context;
  o.concurrency = f.concurrency;
  o.pp = f.pp;
  o.tp = f.tp > 0 ? f.tp : 1;
  if (f.tp == 0) {
    // The fewest GPUs that fit; pipeline stages given with --pp stay as given.
    std::optional<plan::InferenceOptions> fit;
    if (f.pp == 1) fit = plan::smallest_fit(m, o, gpus.tightest, gpus.count);
    for (int tp : {1, 2, 4, 8}) {
      plan::InferenceOptions at = o;
      at.tp = tp;
      if (fit || f.pp == 1 || tp * o.pp > gpus.count) continue;
      if (plan::plan_inference(m, at, gpus.tightest).fits) fit = at;
    }
    if (fit) {
      o = *fit;
    } else {
      // Nothing fits: show the figures on as many GPUs as tensor parallelism can use here.
      for (int tp : {8, 4, 2}) {
        if (tp * o.pp <= gpus.count && m.heads % tp == 0) {
          o.tp = tp;
          break;
        }
      }
    }
  }
  plan::InferenceMemory r = plan::plan_inference(m, o, gpus.tightest);
  if (r.fits && o.tp * o.pp > gpus.count) {
    r.fits = false;
    r.reason = fmt::format("tensor parallel {} × pipeline parallel {} needs {} GPUs, {} here", o.tp,
                           o.pp, o.tp * o.pp, gpus.count);
  }
  std::vector<plan::Suggestion> changes;
  if (!r.fits) changes = plan::suggest_inference(m, o, gpus.tightest, gpus.count);
  auto curve = plan::growth_curve(m, o, gpus.tightest);

  std::ostringstream text;
  const int rc = print_inference(text, m, gpus, o, r, curve, changes);
  if (!f.html.empty()) {
    plan::HtmlPlan page{fmt::format("{} on {}", m.name, gpus_line(gpus)), text.str(), o, r, curve};
    std::ofstream file(f.html, std::ios::trunc);
    file << plan::render_html(page);
    file.close();
    if (!file) {
      ctx.err << "cardiac plan: --html " << f.html << ": cannot write: " << std::strerror(errno)
              << "\n";
      return kExitCannotRun;
    }
  }
  if (f.json) {
    nlohmann::json j;
    j["mode"] = "inference";
    j["engine"] = plan::engine_name(o.engine);
    j["memory_fraction"] = o.memory_fraction.value_or(plan::default_memory_fraction(o.engine));
    j["model"] = model_json(m);
    j["gpus"] = gpus_json(gpus);
    j["plan"] = inference_json(o, r);
    j["fits"] = r.fits;
    j["growth"] = nlohmann::json::array();
    for (const auto& p : curve) {
      j["growth"].push_back({{"context", p.context},
                             {"kv_bytes_per_sequence", whole(p.kv_per_sequence)},
                             {"max_concurrency", p.max_concurrency},
                             {"fits", p.fits}});
    }
    j["changes"] = nlohmann::json::array();
    for (const auto& s : changes) {
      j["changes"].push_back({{"change", s.change}, {"plan", inference_json(s.options, s.memory)}});
    }
    ctx.out << j.dump(2) << "\n";
    return rc;
  }
  ctx.out << text.str();
  return rc;
}

int print_inference(std::ostream& out, const plan::ModelSpec& m, const Gpus& gpus,
                    const plan::InferenceOptions& o, const plan::InferenceMemory& r,
                    const std::vector<plan::GrowthPoint>& curve,
                    const std::vector<plan::Suggestion>& changes) {
  const double fraction = o.memory_fraction.value_or(plan::default_memory_fraction(o.engine));
  std::string rule =
      o.engine == plan::Engine::kTrtllm
          ? fmt::format("{:.2f} × (free − weights − activations − runtime)", fraction)
          : fmt::format("{:.2f} × total − weights − activations − runtime",
                        r.fraction_limit.value_or(fraction));
  out << "Model     " << model_line(m) << "\n";
  out << fmt::format("Serving   {}, {} weights, {} KV cache, {} tokens × {} sequence{}\n",
                     plan::engine_name(o.engine), plan::dtype_name(o.weights),
                     plan::dtype_name(o.kv), with_commas(o.context), with_commas(o.concurrency),
                     o.concurrency == 1 ? "" : "s");
  out << "GPUs      " << gpus_line(gpus) << "\n\n";
  out << fmt::format("Per GPU (tensor parallel {} × pipeline parallel {})\n", o.tp, o.pp);
  out << fmt::format("  engine budget     {:>10}\n", bytes_text(r.budget));
  out << fmt::format("  weights           {:>10}\n", bytes_text(r.weights));
  out << fmt::format("  activation peak   {:>10}\n", bytes_text(r.activation_peak));
  out << fmt::format("  runtime overhead  {:>10}\n", bytes_text(r.non_torch));
  out << fmt::format("  KV cache          {:>10}   {}\n", bytes_text(r.kv_budget), rule);
  if (r.fraction_limit) {
    out << fmt::format(
        "  Other processes hold {}: {} starts only with "
        "--gpu-memory-utilization {:.2f} or less, planned with that.\n",
        bytes_text(r.other_processes), plan::engine_name(o.engine), *r.fraction_limit);
  }
  out << "\n";
  out << fmt::format("KV cache per token      {} (whole model), {} per GPU\n",
                     bytes_text(r.kv_per_token_model), bytes_text(r.kv_per_token));
  out << fmt::format("KV cache per sequence   {} at {} tokens\n",
                     bytes_text(r.kv_per_token_model * static_cast<double>(o.context)),
                     with_commas(o.context));
  out << fmt::format("Max concurrency         {} sequences of {} tokens\n",
                     with_commas(r.max_concurrency), with_commas(o.context));
  out << fmt::format("Max context             {} tokens for {} sequence{}\n\n",
                     with_commas(r.max_context), with_commas(o.concurrency),
                     o.concurrency == 1 ? "" : "s");
  out << fmt::format("Prompt growth ({} sequence{} needed)\n", with_commas(o.concurrency),
                     o.concurrency == 1 ? "" : "s");
  out << "  context     KV/sequence   sequences that fit\n";
  bool stopped = false;
  for (const auto& p : curve) {
    std::string mark;
    if (!p.fits && !stopped) {
      mark = "   <- stops fitting";
      stopped = true;
    }
    out << fmt::format("  {:>9}  {:>12}  {:>10}{}\n", with_commas(p.context),
                       bytes_text(p.kv_per_sequence), with_commas(p.max_concurrency), mark);
  }
  out << "\n";
  if (r.fits) {
    out << fmt::format("FITS on {} of {} GPUs (--tp {} --pp {})\n", o.tp * o.pp, gpus.count, o.tp,
                       o.pp);
    return kExitOk;
  }
  out << fmt::format("DOES NOT FIT on {} of {} GPUs: {}\n", o.tp * o.pp, gpus.count, r.reason);
  if (changes.empty()) {
    out << "No single change tried (fp8 KV, lower concurrency, shorter context, fp8 or int4 "
           "weights, more GPUs) makes it fit here.\n";
  } else {
    out << "Changes that fit:\n";
    for (const auto& s : changes) {
      out << fmt::format("  - {}: {} sequences of {} tokens on {} GPU{}\n", s.change,
                         with_commas(s.memory.max_concurrency), with_commas(s.options.context),
                         s.options.tp * s.options.pp, s.options.tp * s.options.pp == 1 ? "" : "s");
    }
  }
  return kExitFindings;
}

int run_plan(const PlanFlags& f, Context& ctx) {
  if (f.model.empty()) return usage(ctx, "--model: name a preset or a config.json");
  if (!plan::parse_dtype(f.dtype)) {
    return usage(ctx, "--dtype: '" + f.dtype + "' is not one of bf16, fp16, fp8, int8, int4");
  }
  if (!plan::parse_dtype(f.kv_dtype)) {
    return usage(ctx, "--kv-dtype: '" + f.kv_dtype + "' is not one of bf16, fp16, fp8, int8");
  }
  if (!plan::parse_engine(f.engine)) {
    return usage(ctx, "--engine: '" + f.engine + "' is not one of vllm, sglang, trtllm");
  }
  if (!plan::parse_optimizer(f.optimizer)) {
    return usage(ctx, "--optimizer: '" + f.optimizer + "' is not one of adamw, adamw-8bit, sgd");
  }
  if (!plan::parse_recompute(f.recompute)) {
    return usage(ctx, "--recompute: '" + f.recompute + "' is not one of none, selective, full");
  }
  if (f.context <= 0) {
    return usage(ctx,
                 fmt::format("--context: must be a positive number of tokens, not {}", f.context));
  }
  if (f.concurrency <= 0) {
    return usage(ctx, fmt::format("--concurrency: must be at least 1, not {}", f.concurrency));
  }
  if (f.seq_len <= 0) {
    return usage(ctx,
                 fmt::format("--seq-len: must be a positive number of tokens, not {}", f.seq_len));
  }
  if (f.micro_batch <= 0) {
    return usage(ctx, fmt::format("--micro-batch: must be at least 1, not {}", f.micro_batch));
  }
  if (f.tp < 0 || f.pp < 1 || f.dp < 0 || f.gpus < 0) {
    return usage(ctx, "--tp, --pp, --dp and --gpus must be positive");
  }
  if (f.zero < 0 || f.zero > 3) {
    return usage(ctx, fmt::format("--zero: a ZeRO stage 0 to 3, not {}", f.zero));
  }
  if (f.memory_fraction && (*f.memory_fraction <= 0 || *f.memory_fraction > 1)) {
    return usage(ctx, "--gpu-memory-utilization: a fraction above 0 and at most 1");
  }
  auto model = planning::resolve_model(f.model);
  if (!model) return usage(ctx, model.error().what());
  auto gpus = resolve_gpus(f, ctx.clock);
  if (!gpus) {
    ctx.err << "cardiac plan: " << gpus.error().what() << "\n";
    return gpus.error().code == ErrorCode::kUnavailable ? kExitCannotRun : kExitUsage;
  }
  return f.train ? run_training(f, *model, *gpus, ctx) : run_inference(f, *model, *gpus, ctx);
}

}  // namespace

Runner register_plan(CLI::App& sub) {
  auto f = std::make_shared<PlanFlags>();
  sub.footer(
      "Exit status: 0 fits, 1 does not fit (the output lists changes that would), 2 bad input,\n"
      "3 no GPU to plan on (no NVML and no --gpu). Formulas: docs/plan.md.\n"
      "Examples:\n"
      "  cardiac plan --model Llama-3.1-70B --gpu H100-80GB --context 8192 --concurrency 32\n"
      "  cardiac plan --model ./Qwen2.5-7B/config.json --kv-dtype fp8\n"
      "  cardiac plan --model Llama-3.1-8B --train --zero 3 --seq-len 8192");
  sub.add_option("--model", f->model,
                 "A preset (Llama-3.1-8B, -70B, -405B, Qwen2.5-7B, -72B, Mixtral-8x7B, "
                 "DeepSeek-V3) or a Hugging Face config.json (or its directory)")
      ->required();
  sub.add_option("--dtype", f->dtype, "Weights: bf16, fp16, fp8, int8 or int4")
      ->capture_default_str();
  sub.add_option("--kv-dtype", f->kv_dtype, "KV cache: bf16, fp16, fp8 or int8")
      ->capture_default_str();
  sub.add_option("--context", f->context, "Tokens per sequence (prompt + output)")
      ->capture_default_str();
  sub.add_option("--concurrency", f->concurrency, "Sequences served at once")
      ->capture_default_str();
  sub.add_option("--engine", f->engine,
                 "Serving engine whose budget rule applies: vllm, sglang, "
                 "trtllm")
      ->capture_default_str();
  sub.add_option("--gpu-memory-utilization", f->memory_fraction,
                 "The engine's memory fraction (default vllm 0.92, sglang 0.88, trtllm 0.9)");
  sub.add_option("--tp", f->tp, "Tensor-parallel GPUs (default: the fewest that fit)");
  sub.add_option("--pp", f->pp, "Pipeline-parallel stages")->capture_default_str();
  sub.add_option("--gpu", f->gpu,
                 "Plan for this GPU model (H100-80GB, H200, A100-40GB, A100-80GB, L40S, "
                 "RTX4090, …) instead of this machine's GPUs");
  sub.add_option("--gpus", f->gpus,
                 "How many GPUs (with --gpu: default 8; else at most this many)");
  sub.add_flag("--train", f->train, "Plan training instead of serving");
  sub.add_option("--optimizer", f->optimizer, "With --train: adamw, adamw-8bit or sgd")
      ->capture_default_str();
  sub.add_option("--zero", f->zero, "With --train: ZeRO stage 0-3")->capture_default_str();
  sub.add_option("--recompute", f->recompute,
                 "With --train: activation recomputation none, selective or full")
      ->capture_default_str();
  sub.add_option("--dp", f->dp, "With --train: data-parallel GPUs (default: the GPUs left)");
  sub.add_option("--seq-len", f->seq_len, "With --train: tokens per sample")->capture_default_str();
  sub.add_option("--micro-batch", f->micro_batch, "With --train: samples per GPU per step")
      ->capture_default_str();
  sub.add_flag("--json", f->json, "Print the plan as JSON (docs/plan.md)");
  sub.add_option("--html", f->html,
                 "Also write the plan with the prompt-growth chart to this HTML file");
  sub.add_option("--nvml-lib", f->nvml_lib,
                 "NVML library to load (default libnvidia-ml.so.1, then libnvidia-ml.so)");
  sub.add_option("--timeout", f->timeout, "Deadline for each NVML answer")->capture_default_str();
  return [f](Context& ctx) { return run_plan(*f, ctx); };
}

}  // namespace cardiac::cli