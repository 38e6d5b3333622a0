// SPDX-License-Identifier: Apache-2.0
// `cardiac sim`: simulate a GPU cluster under several policies at once (one thread each), and
// `cardiac sim checkpoint`: the Young/Daly advice with a Monte Carlo check.
#include <unistd.h>
#include "core/format.h"

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/sim_setup.h"
#include "core/strings.h"
#include "sim/checkpoint.h"
#include "sim/report.h"

namespace cardiac::cli {
namespace {

struct CheckpointFlags {
  double gpus = 0;
  double mtbf_gpu_hours = 0;
  std::string failures;
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
    ctx.err << "cardiac sim: " << setup.error().what() << "\n";
    return kExitUsage;
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
    ctx.out << sim::to_json(results, setup->description).dump(2) << "\n";
  } else {
    ctx.out << sim::render_table(results);
  }
  return kExitOk;
}

int run_checkpoint(const CheckpointFlags& f, Context& ctx) {
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
  if (f.gpus <= 0) {
    ctx.err << "cardiac sim checkpoint: --gpus must be positive\n";
    return kExitUsage;
  }
  double mtbf_gpu_h = f.mtbf_gpu_hours;
  if (!f.failures.empty()) {
    auto m = sim::failure_preset(f.failures);
    if (!m) {
      ctx.err << "cardiac sim checkpoint: " << m.error().what() << "\n";
      return kExitUsage;
    }
    // The per-GPU MTBF that gives this job the preset's job MTTF.
    mtbf_gpu_h = sim::job_mttf_hours(*m, static_cast<unsigned>(f.gpus), 8) * f.gpus;
  }
  if (!(mtbf_gpu_h > 0)) {
    ctx.err << "cardiac sim checkpoint: give --mtbf-gpu-hours H or --failures PRESET\n";
    return kExitUsage;
  }
  const sim::CheckpointAdvice a = sim::advise(f.gpus, mtbf_gpu_h, *write, *restart, *work);
  const sim::MonteCarloResult mc =
      sim::monte_carlo_ettr(a.daly_interval_s, *write, *restart, a.job_mtbf_s,
                            std::max(*work, 50 * a.daly_interval_s), f.runs, f.seed);
  if (f.json) {
    nlohmann::json j = {{"gpus", a.gpus},
                        {"mtbf_gpu_hours", mtbf_gpu_h},
                        {"job_mtbf_s", a.job_mtbf_s},
                        {"failures_per_day", a.failures_per_day},
                        {"write_s", a.write_s},
                        {"restart_s", a.restart_s},
                        {"young_interval_s", a.young_interval_s},
                        {"daly_interval_s", a.daly_interval_s},
                        {"ettr_young", a.ettr_young},
                        {"ettr_daly", a.ettr_daly},
                        {"ettr_first_order", a.ettr_first_order},
                        {"ettr_no_checkpoint", a.ettr_no_checkpoint},
                        {"work_s", a.work_s},
                        {"monte_carlo",
                         {{"ettr", mc.ettr_mean},
                          {"stderr", mc.ettr_stderr},
                          {"runs", mc.runs},
                          {"failures_per_run", mc.failures_per_run}}}};
    ctx.out << j.dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format(
      "job of {:.0f} GPUs, MTBF {:.0f} GPU-hours: one failure every {:.2f} h ({:.2f} a day)\n"
      "write {:.0f} s, restart {:.0f} s\n\n"
      "  Young interval   {:>9.1f} min   ETTR {:.4f}\n"
      "  Daly interval    {:>9.1f} min   ETTR {:.4f}   (first-order estimate {:.4f})\n"
      "  no checkpoints   ETTR {:.4f} for {:.1f} h of work\n\n"
      "Monte Carlo at the Daly interval: ETTR {:.4f} ± {:.4f} ({} runs)\n",
      a.gpus, mtbf_gpu_h, a.job_mtbf_s / 3600, a.failures_per_day, a.write_s, a.restart_s,
      a.young_interval_s / 60, a.ettr_young, a.daly_interval_s / 60, a.ettr_daly,
      a.ettr_first_order, a.ettr_no_checkpoint, a.work_s / 3600, mc.ettr_mean, mc.ettr_stderr,
      mc.runs);
  return kExitOk;
}

}  // namespace

Runner register_sim(CLI::App& sub) {
  auto f = std::make_shared<SimFlags>();
  auto c = std::make_shared<CheckpointFlags>();
  auto* ck =
      sub.add_subcommand("checkpoint", "Young and Daly intervals, ETTR, a Monte Carlo check");
  ck->add_option("--gpus", c->gpus, "GPUs in the job")->required();
  ck->add_option("--mtbf-gpu-hours", c->mtbf_gpu_hours, "Mean GPU-hours between failures, per GPU");
  ck->add_option("--failures", c->failures, "Take the MTBF from a failure preset (llama3, rsc1…)");
  ck->add_option("--write", c->write, "Checkpoint write time")->capture_default_str();
  ck->add_option("--restart", c->restart, "Restart time after a failure")->capture_default_str();
  ck->add_option("--work", c->work, "Job length for the no-checkpoint figure")
      ->capture_default_str();
  ck->add_option("--runs", c->runs, "Monte Carlo runs")->capture_default_str();
  ck->add_option("--seed", c->seed, "Monte Carlo seed")->capture_default_str();
  ck->add_flag("--json", c->json, "JSON output");
  add_sim_flags(sub, *f);
  return [f, c, ck](Context& ctx) {
    if (ck->parsed()) return run_checkpoint(*c, ctx);
    return run_sim(*f, ctx);
  };
}

}  // namespace cardiac::cli
