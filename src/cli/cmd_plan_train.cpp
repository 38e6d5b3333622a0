// SPDX-License-Identifier: Apache-2.0
// `cardiac plan --train`: model states, activations and the largest micro-batch per GPU, and the
// changes that make a training plan fit.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli/plan_output.h"
#include "core/format.h"
#include "plan/training.h"

namespace cardiac::cli::planning {
namespace {

nlohmann::json training_json(const plan::TrainingOptions& o, const plan::TrainingMemory& r,
                             double gpu_bytes) {
  return {{"optimizer", plan::optimizer_name(o.optimizer)},
          {"recompute", plan::recompute_name(o.recompute)},
          {"zero", o.zero},
          {"dp", o.dp},
          {"tp", o.tp},
          {"pp", o.pp},
          {"seq_len", o.seq_len},
          {"micro_batch", o.micro_batch},
          {"fits", r.total() <= gpu_bytes},
          {"per_gpu",
           {{"weights_bytes", whole(r.weights)},
            {"gradients_bytes", whole(r.gradients)},
            {"optimizer_bytes", whole(r.optimizer)},
            {"activations_bytes", whole(r.activations)},
            {"runtime_bytes", whole(r.runtime)},
            {"total_bytes", whole(r.total())}}}};
}

}  // namespace

int run_training(const PlanFlags& f, const plan::ModelSpec& m, const Gpus& gpus, Context& ctx) {
  plan::TrainingOptions o;
  o.optimizer = *plan::parse_optimizer(f.optimizer);
  o.recompute = *plan::parse_recompute(f.recompute);
  o.zero = f.zero;
  o.tp = f.tp > 0 ? f.tp : 1;
  o.pp = f.pp;
  o.dp = f.dp > 0 ? f.dp : std::max(1, gpus.count / (o.tp * o.pp));
  o.seq_len = f.seq_len;
  o.micro_batch = f.micro_batch;
  const auto room = static_cast<double>(gpus.tightest.free);
  plan::TrainingMemory r = plan::plan_training(m, o);
  const std::int64_t largest = plan::largest_micro_batch(m, o, room);
  const int needed = o.dp * o.tp * o.pp;
  bool fits = r.total() <= room && needed <= gpus.count;

  // Changes tried one at a time, each from the plan as asked.
  std::vector<std::pair<std::string, plan::TrainingOptions>> changes;
  auto consider = [&](std::string what, plan::TrainingOptions at) {
    if (plan::plan_training(m, at).total() <= room) changes.emplace_back(std::move(what), at);
  };
  if (!fits) {
    if (largest >= 1 && largest < o.micro_batch) {
      plan::TrainingOptions at = o;
      at.micro_batch = largest;
      consider(fmt::format("lower micro-batch to {} (--micro-batch {})", largest, largest), at);
    }
    if (o.recompute != plan::Recompute::kFull) {
      plan::TrainingOptions at = o;
      at.recompute = plan::Recompute::kFull;
      consider("full recomputation (--recompute full)", at);
    }
    for (int stage = o.zero + 1; stage <= 3 && o.dp > 1; ++stage) {
      plan::TrainingOptions at = o;
      at.zero = stage;
      if (plan::plan_training(m, at).total() <= room) {
        consider(fmt::format("ZeRO stage {} over {} GPUs (--zero {})", stage, o.dp, stage), at);
        break;
      }
    }
    if (o.optimizer == plan::Optimizer::kAdamW) {
      plan::TrainingOptions at = o;
      at.optimizer = plan::Optimizer::kAdamW8bit;
      consider("8-bit AdamW (--optimizer adamw-8bit)", at);
    }
    // More GPUs: the fewest data-parallel ranks over which ZeRO-3 fits.
    for (int dp = o.dp * 2; dp <= 1024; dp *= 2) {
      plan::TrainingOptions at = o;
      at.zero = 3;
      at.dp = dp;
      if (plan::plan_training(m, at).total() <= room) {
        consider(fmt::format("ZeRO-3 over {} GPUs (--zero 3 --dp {})", dp * o.tp * o.pp, dp), at);
        break;
      }
    }
  }

  if (f.json) {
    nlohmann::json j;
    j["mode"] = "training";
    j["model"] = model_json(m);
    j["gpus"] = gpus_json(gpus);
    j["plan"] = training_json(o, r, room);
    j["plan"]["largest_micro_batch"] = largest;
    j["fits"] = fits;
    j["changes"] = nlohmann::json::array();
    for (const auto& [what, at] : changes) {
      j["changes"].push_back(
          {{"change", what}, {"plan", training_json(at, plan::plan_training(m, at), room)}});
    }
    ctx.out << j.dump(2) << "\n";
    return fits ? kExitOk : kExitFindings;
  }
  auto& out = ctx.out;
  out << "Model     " << model_line(m) << "\n";
  out << fmt::format(
      "Training  {} with bf16 weights, ZeRO-{} over {} data-parallel GPUs, tp {} × pp {}, "
      "recompute {}, {} tokens × micro-batch {}\n",
      plan::optimizer_name(o.optimizer), o.zero, o.dp, o.tp, o.pp,
      plan::recompute_name(o.recompute), with_commas(o.seq_len), with_commas(o.micro_batch));
  out << "GPUs      " << gpus_line(gpus) << "\n\n";
  out << "Per GPU\n";
  out << fmt::format("  weights       {:>10}\n", bytes_text(r.weights));
  out << fmt::format("  gradients     {:>10}\n", bytes_text(r.gradients));
  out << fmt::format("  optimizer     {:>10}\n", bytes_text(r.optimizer));
  out << fmt::format("  activations   {:>10}   ({} per sample)\n", bytes_text(r.activations),
                     bytes_text(r.activations_per_sample));
  out << fmt::format("  runtime       {:>10}\n", bytes_text(r.runtime));
  out << fmt::format("  total         {:>10}   of {} free\n\n", bytes_text(r.total()),
                     bytes_text(room));
  out << fmt::format("Largest micro-batch     {}\n\n", with_commas(largest));
  if (fits) {
    out << fmt::format("FITS on {} of {} GPUs\n", needed, gpus.count);
    return kExitOk;
  }
  if (needed > gpus.count) {
    out << fmt::format("DOES NOT FIT: dp {} × tp {} × pp {} needs {} GPUs, {} here\n", o.dp, o.tp,
                       o.pp, needed, gpus.count);
  } else {
    out << fmt::format("DOES NOT FIT: {} per GPU, {} free\n", bytes_text(r.total()),
                       bytes_text(room));
  }
  if (changes.empty()) {
    out << "No single change tried (micro-batch, full recomputation, ZeRO, 8-bit AdamW, more "
           "GPUs) makes it fit here.\n";
  } else {
    out << "Changes that fit:\n";
    for (const auto& [what, at] : changes) {
      out << fmt::format("  - {}: {} per GPU\n", what,
                         bytes_text(plan::plan_training(m, at).total()));
    }
  }
  return kExitFindings;
}

}  // namespace cardiac::cli::planning
