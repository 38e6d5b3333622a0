// SPDX-License-Identifier: Apache-2.0
// `cardiac sim`: simulate a GPU cluster under several policies at once (one thread each), and
// `cardiac sim checkpoint`: the Young/Daly advice with a Monte Carlo check.
#include <unistd.h>
#include "core/format.h"

#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/sim_setup.h"
#include "core/strings.h"
#include "core/text.h"
#include "sim/checkpoint.h"
#include "sim/report.h"

namespace cardiac::cli {
namespace {

struct CheckpointFlags {
  double gpus = 0;
  std::optional<double> mtbf_gpu_hours;
  std::string failures;
  std::string interval;  // evaluate this compute interval too
  bool overlap = false;  // writes run beside compute
  std::string write = "30s";
  std::string restart = "10m";
  std::string work = "1d";
  std::uint64_t runs = 2000;
  std::uint64_t seed = 1;
  bool json = false;
};

Status write_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    fmt::print("{}", text);
    return {};
  }
  std::ofstream f(path, std::ios::trunc);
  f << text;
  f.close();
  if (!f) return fail(Error::io(path, errno));
  return {};
}

int run_sim(const SimFlags& flags, Context& ctx) {
  auto setup = build_sim_setup(flags);
  if (!setup) {
    // printable(): a binary file's header must not reach the terminal as control codes.
    ctx.err << "cardiac sim: " << printable(setup.error().what()) << "\n";
    return kExitUsage;
  }
  if (!flags.failures_out.empty()) {
    // One history: the failure stream does not depend on the policy or the checkpoints.
    for (const SimRun& r : setup->runs) {
      if (r.config.seed != setup->runs[0].config.seed ||
          r.config.failures.name != setup->runs[0].config.failures.name) {
        ctx.err << "cardiac sim: --failures-out writes one failure history: give one "
                   "--failures and one --seed\n";
        return kExitUsage;
      }
    }
    auto history = simulated_failures(setup->runs[0].config);
    if (!history) {
      ctx.err << "cardiac sim: " << history.error().what() << "\n";
      return kExitUsage;
    }
    if (auto w = write_file(flags.failures_out, history->dump(2) + "\n"); !w) {
      ctx.err << "cardiac sim: " << w.error().what() << "\n";
      return kExitCannotRun;
    }
  }
  const std::size_t n = setup->runs.size();
  std::vector<sim::NamedResult> results(n);
  std::vector<std::atomic<double>> done(n);
  for (auto& d : done) d = 0;
  std::mutex mu;
  std::optional<Error> error;
  const bool show = !flags.quiet && isatty(STDERR_FILENO);
  if (!flags.quiet) {
    ctx.err << fmt::format("cardiac sim: {} jobs on {} GPUs, {} run(s)\n", setup->trace.jobs.size(),
                           setup->runs[0].config.cluster.gpus(), n);
  }
  auto report = [&] {
    double sum = 0;
    for (auto& d : done) sum += d.load();
    std::lock_guard lock(mu);
    const int pct = static_cast<int>(100 * sum / static_cast<double>(n));
    const int bar = pct / 4;
    ctx.err << fmt::format("\r[{:<25}] {:3d} %", std::string(static_cast<std::size_t>(bar), '#'),
                           pct)
            << std::flush;
  };
  std::atomic<std::size_t> next{0};
  const unsigned threads = std::max(
      1u,
      std::min<unsigned>(static_cast<unsigned>(n),
                         flags.threads > 0 ? flags.threads : std::thread::hardware_concurrency()));
  auto worker = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      sim::Progress progress = [&, i](double f) {
        done[i] = f;
        if (show) report();
      };
      auto r = sim::simulate(setup->runs[i].config, setup->trace.jobs, progress);
      std::lock_guard lock(mu);
      if (!r) {
        error = r.error();
        continue;
      }
      results[i] = sim::NamedResult{.label = setup->runs[i].label, .result = std::move(*r)};
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (show) ctx.err << "\n";
  if (error) {
    ctx.err << "cardiac sim: " << error->what() << "\n";
    return kExitUsage;
  }
  if (!flags.jobs_out.empty()) {
    if (auto w = write_file(flags.jobs_out, sim::jobs_csv(results)); !w) {
      ctx.err << "cardiac sim: " << w.error().what() << "\n";
      return kExitCannotRun;
    }
  }
  if (!flags.csv.empty()) {
    if (auto w = write_file(flags.csv, sim::series_csv(results)); !w) {
      ctx.err << "cardiac sim: " << w.error().what() << "\n";
      return kExitCannotRun;
    }
  }
  if (!flags.html.empty()) {
    if (auto w = write_file(flags.html, sim::render_html(results, setup->description)); !w) {
      ctx.err << "cardiac sim: " << w.error().what() << "\n";
      return kExitCannotRun;
    }
  }
  if (flags.json) {
    nlohmann::json j = sim::to_json(results, setup->description);
    if (setup->fitted) j["fitted_failure_model"] = fitted_json(*setup->fitted);
    ctx.out << j.dump(2) << "\n";
  } else {
    if (setup->fitted) ctx.out << fitted_text(*setup->fitted);
    ctx.out << sim::render_table(results);
  }
  return kExitOk;
}

// The first-order (Meta) estimate and the full Daly model part ways once failures are frequent
// against the interval; past this gap (in ETTR) the output says so.
constexpr double kDivergence = 0.01;

// One checkpoint interval judged by both models.
struct IntervalRow {
  std::string name;
  double interval_s = 0;
  double ettr_full = 0;
  double ettr_meta = 0;
  [[nodiscard]] bool diverge() const { return std::abs(ettr_full - ettr_meta) > kDivergence; }
};

int run_checkpoint(const CheckpointFlags& f, Context& ctx) {
  auto usage = [&](std::string_view why) {
    ctx.err << "cardiac sim checkpoint: " << why << "\n";
    return kExitUsage;
  };
  auto seconds = [&](const std::string& text, const char* flag) -> std::optional<double> {
    auto ns = parse_duration_ns(text);
    if (!ns || *ns < 0) {
      ctx.err << fmt::format("cardiac sim checkpoint: {} '{}': expected a duration like 30s\n",
                             flag, text);
      return std::nullopt;
    }
    return static_cast<double>(*ns) / 1e9;
  };
  auto write = seconds(f.write, "--write");
  auto restart = seconds(f.restart, "--restart");
  auto work = seconds(f.work, "--work");
  if (!write || !restart || !work) return kExitUsage;
  std::optional<double> given;
  if (!f.interval.empty()) {
    given = seconds(f.interval, "--interval");
    if (!given) return kExitUsage;
    if (*given <= 0) return usage(fmt::format("--interval '{}' must be positive", f.interval));
  }
  // A job has a whole number of GPUs: 1.4 would be printed as 1 and computed as 1.4.
  if (!(f.gpus >= 1) || !std::isfinite(f.gpus) || f.gpus != std::floor(f.gpus)) {
    return usage(fmt::format("--gpus {:g}: expected a whole positive number of GPUs", f.gpus));
  }
  if (f.mtbf_gpu_hours && !f.failures.empty()) {
    return usage("give --mtbf-gpu-hours or --failures, not both");
  }
  if (f.mtbf_gpu_hours && !(*f.mtbf_gpu_hours > 0 && std::isfinite(*f.mtbf_gpu_hours))) {
    return usage("--mtbf-gpu-hours must be a positive number");
  }
  double mtbf_gpu_h = f.mtbf_gpu_hours.value_or(0);
  if (!f.failures.empty()) {
    auto m = sim::failure_preset(f.failures);
    if (!m) return usage(m.error().what());
    // The per-GPU MTBF that gives this job the preset's job MTTF.
    mtbf_gpu_h = sim::job_mttf_hours(*m, static_cast<unsigned>(f.gpus), 8) * f.gpus;
  }
  if (!(mtbf_gpu_h > 0)) return usage("give --mtbf-gpu-hours H or --failures PRESET");
  const sim::CheckpointAdvice a = sim::advise(f.gpus, mtbf_gpu_h, *write, *restart, *work);
  // Both models take the write as stalled compute. An overlapped write stalls nothing, but the
  // state it saves is a write's length old when it becomes durable: a failure loses that much
  // more work, which the models see as a longer restart.
  const auto mode = f.overlap ? sim::CheckpointWrite::kOverlapped : sim::CheckpointWrite::kBlocking;
  const double stall = f.overlap ? 0.0 : *write;
  const double lost = f.overlap ? *restart + *write : *restart;
  auto row = [&](std::string name, sim::CheckpointPolicy::Kind kind, double fixed) {
    sim::CheckpointPolicy p{
        .kind = kind, .interval_s = fixed, .write_s = *write, .restart_s = *restart, .write = mode};
    const double tau = sim::interval_for(p, a.job_mtbf_s);
    return IntervalRow{std::move(name), tau, sim::ettr_daly(tau, stall, lost, a.job_mtbf_s),
                       sim::ettr_meta(tau, stall, lost, a.job_mtbf_s)};
  };
  std::vector<IntervalRow> rows = {row("young", sim::CheckpointPolicy::kYoung, 0),
                                   row("daly", sim::CheckpointPolicy::kDaly, 0)};
  if (given) rows.push_back(row("given", sim::CheckpointPolicy::kFixed, *given));
  const IntervalRow& checked = rows.back();
  const sim::MonteCarloResult mc =
      sim::monte_carlo_ettr(checked.interval_s, *write, *restart, a.job_mtbf_s,
                            std::max(*work, 50 * checked.interval_s), f.runs, f.seed, mode);
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  if (f.json) {
    nlohmann::json intervals = nlohmann::json::array();
    for (const IntervalRow& r : rows) {
      intervals.push_back({{"name", r.name},
                           {"interval_s", r.interval_s},
                           {"ettr", number(r.ettr_full)},
                           {"ettr_meta", number(r.ettr_meta)},
                           {"diverge", r.diverge()}});
    }
    nlohmann::json j = {{"gpus", a.gpus},
                        {"mtbf_gpu_hours", mtbf_gpu_h},
                        {"job_mtbf_s", a.job_mtbf_s},
                        {"failures_per_day", a.failures_per_day},
                        {"write_s", a.write_s},
                        {"write", f.overlap ? "overlapped" : "blocking"},
                        {"restart_s", a.restart_s},
                        {"young_interval_s", rows[0].interval_s},
                        {"daly_interval_s", rows[1].interval_s},
                        {"ettr_young", number(rows[0].ettr_full)},
                        {"ettr_daly", number(rows[1].ettr_full)},
                        {"ettr_first_order", number(a.ettr_first_order)},
                        {"ettr_no_checkpoint", number(a.ettr_no_checkpoint)},
                        {"work_s", a.work_s},
                        {"intervals", intervals},
                        {"monte_carlo",
                         {{"interval", checked.name},
                          {"interval_s", checked.interval_s},
                          {"ettr", number(mc.ettr_mean)},
                          {"stderr", number(mc.ettr_stderr)},
                          {"runs", mc.runs},
                          {"failures_per_run", number(mc.failures_per_run)}}}};
    if (given) j["interval_s"] = *given;
    ctx.out << j.dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format(
      "job of {:.0f} GPU{}, MTBF {:.0f} GPU-hours: one failure every {:.2f} h ({:.2f} a day)\n"
      "write {:g} s ({}), restart {:g} s\n\n"
      "  {:<12} {:>13}   {:>15}   {:>18}\n",
      a.gpus, a.gpus == 1 ? "" : "s", mtbf_gpu_h, a.job_mtbf_s / 3600, a.failures_per_day,
      a.write_s, f.overlap ? "overlapped with compute" : "blocking", a.restart_s, "", "interval",
      "ETTR full model", "first-order (Meta)");
  const std::map<std::string, std::string> labels = {
      {"young", "Young"}, {"daly", "Daly"}, {"given", "--interval"}};
  auto span = [](double s) {
    return s < 120 ? fmt::format("{:.0f} s", s) : fmt::format("{:.1f} min", s / 60);
  };
  for (const IntervalRow& r : rows) {
    ctx.out << fmt::format("  {:<12} {:>13}   {:>15.4f}   {:>18.4f}{}\n", labels.at(r.name),
                           span(r.interval_s), r.ettr_full, r.ettr_meta,
                           r.diverge() ? "   (diverge)" : "");
  }
  ctx.out << fmt::format("  no checkpoints   ETTR {:.4f} for {:.1f} h of work\n",
                         a.ettr_no_checkpoint, a.work_s / 3600);
  for (const IntervalRow& r : rows) {
    if (!r.diverge()) continue;
    ctx.out << fmt::format(
        "\nAt the {} interval the first-order estimate is {:.1f} points off the full model: "
        "failures are too frequent for it; trust the full model.\n",
        labels.at(r.name), 100 * std::abs(r.ettr_full - r.ettr_meta));
    break;
  }
  if (mc.runs == 0) {
    ctx.out << fmt::format(
        "\nMonte Carlo at the {} interval: not run (the job makes no progress)\n",
        labels.at(checked.name));
  } else {
    ctx.out << fmt::format("\nMonte Carlo at the {} interval: ETTR {:.4f} ± {:.4f} ({} runs)\n",
                           labels.at(checked.name), mc.ettr_mean, mc.ettr_stderr, mc.runs);
  }
  return kExitOk;
}

}  // namespace

Runner register_sim_serve(CLI::App& sub);  // cmd_sim_serve.cpp

Runner register_sim(CLI::App& sub) {
  auto f = std::make_shared<SimFlags>();
  auto c = std::make_shared<CheckpointFlags>();
  auto* ck =
      sub.add_subcommand("checkpoint", "Young and Daly intervals, ETTR, a Monte Carlo check");
  ck->add_option("--gpus", c->gpus, "GPUs in the job")->required();
  ck->add_option("--mtbf-gpu-hours", c->mtbf_gpu_hours, "Mean GPU-hours between failures, per GPU");
  ck->add_option("--failures", c->failures, "Take the MTBF from a failure preset (llama3, rsc1…)");
  ck->add_option("--write", c->write, "Checkpoint write time")->capture_default_str();
  ck->add_option("--interval", c->interval, "Also judge this compute interval, e.g. 60m");
  ck->add_flag("--overlap", c->overlap, "Writes run beside compute instead of stopping it");
  ck->add_option("--restart", c->restart, "Restart time after a failure")->capture_default_str();
  ck->add_option("--work", c->work, "Job length for the no-checkpoint figure")
      ->capture_default_str();
  ck->add_option("--runs", c->runs, "Monte Carlo runs")->capture_default_str();
  ck->add_option("--seed", c->seed, "Monte Carlo seed")->capture_default_str();
  ck->add_flag("--json", c->json, "JSON output");
  auto* serve = sub.add_subcommand(
      "serve", "An inference server: static vs continuous batching, reserved vs paged KV");
  Runner run_serve = register_sim_serve(*serve);
  add_sim_flags(sub, *f);
  return [f, c, ck, serve, run_serve](Context& ctx) {
    if (ck->parsed()) return run_checkpoint(*c, ctx);
    if (serve->parsed()) return run_serve(ctx);
    return run_sim(*f, ctx);
  };
}

}  // namespace cardiac::cli
