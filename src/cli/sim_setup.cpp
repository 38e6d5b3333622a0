// SPDX-License-Identifier: Apache-2.0
// From flags and an optional TOML file to the simulator's runs: the workload (a trace or the
// synthetic generator), the cluster, and one run per policy of a sweep.
#include "cli/sim_setup.h"

#include <cmath>

#include "core/format.h"

#include "core/strings.h"
#include "sim/synth.h"

namespace cardiac::cli {
namespace {

// The most synthetic jobs one run generates: about 10 GB of trace and job state.
constexpr double kMaxSynthJobs = 50'000'000;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Result<sim::ClusterSpec> cluster_of(const SimFlags& f, const sim::Trace& trace) {
  if (!f.cluster.empty()) return sim::parse_cluster(f.cluster);
  if (!f.nodes_file.empty()) {
    auto groups = sim::load_openb_nodes(f.nodes_file);
    if (!groups) return fail(groups.error());
    sim::ClusterSpec spec;
    for (const auto& g : *groups) {
      spec.types.push_back(sim::NodeType{.model = g.model,
                                         .gpus_per_node = g.gpus_per_node,
                                         .count = g.count,
                                         .gpu_memory = std::uint64_t{80} << 30});
    }
    // The largest nodes first: multi-node jobs and the failure topology use the first type.
    std::stable_sort(spec.types.begin(), spec.types.end(), [](const auto& a, const auto& b) {
      return a.gpus_per_node > b.gpus_per_node;
    });
    return spec;
  }
  // Enough 8-GPU nodes for the largest job, and for the offered load at about 80 %.
  const sim::TraceStats st = sim::trace_stats(trace);
  const double span_h = std::max(st.span_s / 3600, 1.0);
  const double gpus = std::max<double>(st.max_gpus, st.total_gpu_hours / span_h / 0.8);
  const auto nodes = static_cast<unsigned>(std::max(1.0, std::ceil(gpus / 8)));
  return sim::parse_cluster(fmt::format("{}x8", nodes));
}

// The straggler settings of the flags over one failure model, one model per detection time.
struct SlowVariant {
  std::string label;  // "detect 30m" when the detection times sweep, else ""
  std::optional<DurationNs> detection;
};

Result<std::vector<SlowVariant>> slow_variants(const SimFlags& f) {
  std::vector<SlowVariant> out;
  for (const std::string& text : f.fail_slow_detection) {
    auto ns = parse_duration_ns(text);
    if (!ns || *ns < 0) {
      return fail(Error::invalid(
          fmt::format("--fail-slow-detection '{}': expected a duration like 30m", text)));
    }
    out.push_back({f.fail_slow_detection.size() > 1 ? "detect " + text : "", ns});
  }
  if (out.empty()) out.push_back({});
  return out;
}

Status apply_fail_slow(const SimFlags& f, const SlowVariant& v, sim::FailureModel& m) {
  if (!f.fail_slow.empty()) {
    auto rate = f.fail_slow == "typical" ? std::optional<double>(sim::kTypicalFailSlowPerGpuDay)
                                         : parse_double(f.fail_slow);
    if (!rate || !std::isfinite(*rate) || *rate < 0) {
      return fail(Error::invalid(
          fmt::format("--fail-slow '{}': expected stragglers per GPU-day (e.g. 1e-4) or 'typical'",
                      f.fail_slow)));
    }
    m.slow.per_gpu_day = *rate;
  }
  if (f.fail_slow_factor) m.slow.factor = *f.fail_slow_factor;
  if (v.detection) m.slow.detection = *v.detection;
  if (!f.fail_slow_repair.empty()) {
    auto ns = parse_duration_ns(f.fail_slow_repair);
    if (!ns || *ns < 0) {
      return fail(Error::invalid(fmt::format(
          "--fail-slow-repair '{}': expected a duration like 24h", f.fail_slow_repair)));
    }
    m.slow.repair = *ns;
  }
  const bool tuned =
      f.fail_slow_factor || !f.fail_slow_detection.empty() || !f.fail_slow_repair.empty();
  if (tuned && !m.slow.on()) {
    return fail(Error::invalid(
        "--fail-slow-factor, --fail-slow-detection and --fail-slow-repair shape stragglers: "
        "give --fail-slow RATE (e.g. typical) too"));
  }
  if (auto st = sim::validate_model(m); !st) {
    return fail(Error::invalid(st.error().message, "--fail-slow"));
  }
  return {};
}

}  // namespace

void add_sim_flags(CLI::App& sub, SimFlags& f) {
  sub.add_option("--config", f.config, "TOML file with any of the flags below (flags win)");
  sub.add_option("--trace", f.trace, "Workload trace (generic CSV or Alibaba openb)");
  sub.add_option("--format", f.format, "Trace format: auto, generic, openb")
      ->check(CLI::IsMember({"auto", "generic", "openb"}));
  sub.add_option("--synth", f.synth, "Synthetic workload preset: seren, kalos, philly, helios");
  sub.add_option("--jobs", f.jobs, "Synthetic jobs to generate");
  sub.add_option("--load", f.load, "Synthetic offered load (GPU-hours / capacity), e.g. 0.8");
  sub.add_option("--nodes-file", f.nodes_file, "openb node list: simulate the trace's machines");
  sub.add_option("--cluster", f.cluster, "NODESxGPUS[:MODEL][,…][+SPARES], e.g. 2048x8+64");
  sub.add_option("--policy", f.policy, "Policies to compare, comma-separated (fcfs,backfill,…)");
  // One value per occurrence, every occurrence kept: `--seed 1 --seed 2` sweeps two seeds.
  auto repeatable = [](CLI::Option* o) {
    o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  repeatable(
      sub.add_option("--failures", f.failures,
                     "Failure preset: none, llama3, rsc1, rsc1-all, rsc2 (repeat to sweep)"));
  sub.add_option("--failures-from", f.failures_from,
                 "Fit the failure model from these cardiac.failure-stats/v1 files (`cardiac stats "
                 "failures --json` of every node), merged; instead of --failures")
      ->expected(1, -1);
  sub.add_option("--failures-out", f.failures_out,
                 "Write the simulated failure history as a cardiac.failure-stats/v1 file "
                 "(needs --days; one --failures and one --seed)");
  repeatable(sub.add_option("--checkpoint", f.checkpoint,
                            "none, daly, young, fixed:30m [,write=…,restart=…] (repeat to sweep)"));
  repeatable(sub.add_option("--seed", f.seeds, "Random seed (repeat to sweep)"));
  sub.add_option("--fail-slow", f.fail_slow,
                 "Fail-slow GPUs: stragglers per GPU-day, or 'typical' (1e-4, assumed); each "
                 "slows every job on it until detected (default 0: none)");
  sub.add_option("--fail-slow-factor", f.fail_slow_factor,
                 "How many times slower a job runs with a straggler in it (default 1.5)");
  repeatable(sub.add_option("--fail-slow-detection", f.fail_slow_detection,
                            "From a GPU turning slow to it being taken out and its jobs "
                            "requeued (default 30m; repeat to sweep)"));
  sub.add_option("--fail-slow-repair", f.fail_slow_repair,
                 "How long a detected straggler is out of service (default 24h)");
  sub.add_option("--nodes-per-domain", f.nodes_per_domain,
                 "Nodes under one switch / rack / power domain (default 16)");
  sub.add_option("--days", f.days, "Stop after this many simulated days");
  sub.add_option("--backfill-interval", f.backfill_interval,
                 "Backfill at most this often, like Slurm's bf_interval (default 30s; 0: always)");
  sub.add_option("--priority-calc-period", f.priority_calc_period,
                 "Recompute priority and fair-share factors at most this often, like Slurm's "
                 "PriorityCalcPeriod (default 5m; 0: before every pass)");
  sub.add_option("--threads", f.threads, "Runs in parallel (default: every core)");
  sub.add_flag("--json", f.json, "JSON output");
  sub.add_flag("-q,--quiet", f.quiet, "No progress on stderr");
  sub.add_option("--jobs-out", f.jobs_out, "Per-job CSV file");
  sub.add_option("--csv", f.csv, "Time-series CSV file");
  sub.add_option("--html", f.html, "HTML report file");
}

namespace {

// What the reports' setup says of stragglers: null when there are none.
nlohmann::json fail_slow_description(const SimFlags& f, const std::vector<sim::FailureModel>& ms) {
  if (ms.empty() || !ms.front().slow.on()) return nullptr;
  const sim::FailSlow& s = ms.front().slow;
  nlohmann::json detection = nlohmann::json::array();
  if (f.fail_slow_detection.empty()) {
    detection.push_back(fmt::format("{}s", s.detection / kNsPerSec));
  } else {
    for (const auto& d : f.fail_slow_detection) detection.push_back(d);
  }
  return {{"per_gpu_day", s.per_gpu_day},
          {"factor", s.factor},
          {"detection", detection},
          {"repair_h", static_cast<double>(s.repair) / 3.6e12}};
}

}  // namespace

Result<SimSetup> build_sim_setup(const SimFlags& flags) {
  SimFlags f = flags;
  if (!f.backfill_interval.empty()) {
    auto ns = parse_duration_ns(f.backfill_interval);
    if (!ns || *ns < 0) {
      return fail(Error::invalid(fmt::format(
          "--backfill-interval '{}': expected a duration like 30s", f.backfill_interval)));
    }
    f.tuning.backfill_interval = ns;
  }
  if (!f.priority_calc_period.empty()) {
    auto ns = parse_duration_ns(f.priority_calc_period);
    if (!ns || *ns < 0) {
      return fail(Error::invalid(fmt::format(
          "--priority-calc-period '{}': expected a duration like 5m", f.priority_calc_period)));
    }
    f.tuning.priority_calc_period = ns;
  }
  const bool failures_flag = !f.failures.empty();
  if (!f.config.empty()) CARDIAC_TRY(apply_sim_file(f.config, f));
  // Flags win: --failures-from replaces the file's failure presets.
  if (!f.failures_from.empty() && !failures_flag) f.failures.clear();
  SimSetup setup;
  if (!f.trace.empty() && !f.synth.empty()) {
    return fail(Error::invalid("give --trace or --synth, not both"));
  }
  if (f.trace.empty() && f.synth.empty()) {
    return fail(Error::invalid(
        "no workload: give --trace FILE or --synth PRESET (seren, kalos, philly, helios)"));
  }
  if (!f.trace.empty() && (f.jobs || f.load)) {
    return fail(Error::invalid(
        "--jobs and --load shape a synthetic workload (--synth); a trace brings its own jobs"));
  }
  if (f.jobs && !(*f.jobs >= 1 && *f.jobs <= kMaxSynthJobs && *f.jobs == std::floor(*f.jobs))) {
    return fail(Error::invalid(
        fmt::format("--jobs {}: expected a whole number from 1 to 50,000,000", *f.jobs)));
  }
  if (f.load && !(*f.load > 0 && std::isfinite(*f.load))) {
    return fail(Error::invalid(fmt::format(
        "--load {}: expected a positive number of offered GPU-hours per GPU-hour, e.g. 0.8",
        *f.load)));
  }
  if (!f.trace.empty()) {
    auto t = sim::load_trace(f.trace, f.format);
    if (!t) return fail(t.error());
    setup.trace = std::move(*t);
  }
  auto cluster = Result<sim::ClusterSpec>(fail(Error::invalid("no cluster")));
  if (!f.synth.empty()) {
    auto p = sim::synth_preset(f.synth);
    if (!p) return fail(p.error());
    if (f.jobs) p->jobs = static_cast<std::size_t>(*f.jobs);
    if (!f.cluster.empty()) {
      cluster = sim::parse_cluster(f.cluster);
      if (!cluster) return fail(cluster.error());
      p->cluster_gpus = cluster->gpus();
      p->max_gpus = std::min(p->max_gpus, p->cluster_gpus);
    }
    if (f.load) p->target_load = *f.load;
    auto fit = sim::fit_synth(*p);
    if (!fit) return fail(fit.error());
    // --days and --load without --jobs: as many jobs as fill the cluster to that load for
    // that long (the generator then spaces their arrivals to match).
    if (!f.jobs && f.days > 0 && f.load && p->cluster_gpus > 0) {
      double mean_gpus = 0;
      for (std::size_t i = 0; i < fit->sizes.size(); ++i)
        mean_gpus += fit->sizes[i] * fit->probs[i];
      const double job_gpu_s = std::max(mean_gpus, 1e-9) * std::max(p->mean_duration_s, 1e-9);
      p->jobs = static_cast<std::size_t>(
          std::ceil(*f.load * p->cluster_gpus * f.days * 86400 / job_gpu_s));
      if (static_cast<double>(p->jobs) > kMaxSynthJobs) {
        return fail(Error::invalid(fmt::format(
            "--days {} at load {} would take {} jobs; give --jobs", f.days, *f.load, p->jobs)));
      }
    }
    setup.trace = sim::synthesize(*p, f.seeds.empty() ? 1 : f.seeds.front());
  }
  if (setup.trace.jobs.empty()) return fail(Error::invalid("the workload has no GPU jobs"));
  if (!cluster) cluster = cluster_of(f, setup.trace);
  if (!cluster) return fail(cluster.error());

  sim::SimConfig base;
  base.cluster = *cluster;
  if (f.nodes_per_domain > 0) base.cluster.nodes_per_domain = f.nodes_per_domain;
  if (f.days < 0) return fail(Error::invalid("--days must not be negative"));
  base.horizon = static_cast<TimeNs>(f.days * 86400 * 1e9);
  const std::vector<std::string> policies = split_list(f.policy.empty() ? "fcfs" : f.policy);
  std::vector<std::string> failure_texts =
      f.failures.empty() ? std::vector<std::string>{"none"} : f.failures;
  const std::vector<std::string> checkpoint_texts =
      f.checkpoint.empty() ? std::vector<std::string>{"none"} : f.checkpoint;
  const std::vector<std::uint64_t> seeds =
      f.seeds.empty() ? std::vector<std::uint64_t>{1} : f.seeds;
  std::vector<sim::FailureModel> models;
  if (!f.failures_from.empty()) {
    if (!f.failures.empty()) {
      return fail(Error::invalid("give --failures or --failures-from, not both"));
    }
    auto fitted = fit_failures_from(f.failures_from);
    if (!fitted) return fail(fitted.error().with_context("--failures-from"));
    failure_texts = {fitted->model.name};
    models.push_back(fitted->model);
    setup.fitted = std::move(*fitted);
  } else {
    for (const auto& text : failure_texts) {
      auto m = sim::failure_preset(text);
      if (!m) return fail(m.error().with_context("--failures"));
      models.push_back(*m);
    }
  }
  // Each model once per straggler detection time; the label names what varies.
  auto variants = slow_variants(f);
  if (!variants) return fail(variants.error());
  std::vector<std::string> model_labels;
  {
    std::vector<sim::FailureModel> each;
    for (std::size_t fi = 0; fi < models.size(); ++fi) {
      for (const SlowVariant& v : *variants) {
        sim::FailureModel m = models[fi];
        CARDIAC_TRY(apply_fail_slow(f, v, m));
        std::string label = models.size() > 1 ? failure_texts[fi] : "";
        if (!v.label.empty()) label += (label.empty() ? "" : " | ") + v.label;
        each.push_back(std::move(m));
        model_labels.push_back(std::move(label));
      }
    }
    models = std::move(each);
  }
  std::vector<sim::CheckpointPolicy> ckpts;
  for (const auto& text : checkpoint_texts) {
    auto c = sim::parse_checkpoint_policy(text);
    if (!c) return fail(c.error().with_context("--checkpoint"));
    ckpts.push_back(*c);
  }
  std::vector<sched::PolicyConfig> parsed;
  for (const std::string& name : policies) {
    auto p = sched::parse_policy(name);
    if (!p) return fail(p.error().with_context("--policy"));
    p->explain = false;
    const PolicyTuning& t = f.tuning;
    if (t.half_life) p->half_life = *t.half_life;
    if (t.max_age) p->weights.max_age = *t.max_age;
    if (t.fair_tree) p->fair_tree = *t.fair_tree;
    if (t.favor_small) p->weights.favor_small = *t.favor_small;
    if (t.spread) p->spread = *t.spread;
    if (t.dampening) p->dampening = *t.dampening;
    if (t.w_age) p->weights.age = *t.w_age;
    if (t.w_fairshare) p->weights.fairshare = *t.w_fairshare;
    if (t.w_job_size) p->weights.job_size = *t.w_job_size;
    if (t.w_qos) p->weights.qos = *t.w_qos;
    parsed.push_back(*p);
  }
  // Labels name only what varies across the sweep (the policy always).
  for (std::size_t pi = 0; pi < parsed.size(); ++pi) {
    for (std::size_t fi = 0; fi < models.size(); ++fi) {
      for (std::size_t ci = 0; ci < ckpts.size(); ++ci) {
        for (std::uint64_t seed : seeds) {
          SimRun run{.label = policies[pi], .config = base};
          if (!model_labels[fi].empty()) run.label += " | " + model_labels[fi];
          if (ckpts.size() > 1) run.label += " | " + checkpoint_texts[ci];
          if (seeds.size() > 1) run.label += fmt::format(" | seed {}", seed);
          run.config.policy = parsed[pi];
          run.config.failures = models[fi];
          run.config.checkpoint = ckpts[ci];
          run.config.seed = seed;
          if (f.tuning.backfill_interval) {
            run.config.backfill_interval = *f.tuning.backfill_interval;
          }
          if (f.tuning.priority_calc_period) {
            run.config.priority_calc_period = *f.tuning.priority_calc_period;
          }
          setup.runs.push_back(std::move(run));
        }
      }
    }
  }
  setup.description = {{"workload", setup.trace.source},
                       {"jobs", setup.trace.jobs.size()},
                       {"skipped", setup.trace.skipped},
                       {"notes", setup.trace.notes},
                       {"cluster_nodes", base.cluster.nodes()},
                       {"cluster_gpus", base.cluster.gpus()},
                       {"nodes_per_domain", base.cluster.nodes_per_domain},
                       {"failures", failure_texts},
                       {"checkpoint", checkpoint_texts},
                       {"seeds", seeds},
                       {"days", f.days},
                       {"policies", policies}};
  // Only with stragglers: a run without them describes itself as it always did.
  if (auto slow = fail_slow_description(f, models); !slow.is_null()) {
    setup.description["fail_slow"] = std::move(slow);
  }
  return setup;
}

}  // namespace cardiac::cli
