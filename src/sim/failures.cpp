// SPDX-License-Identifier: Apache-2.0
// Failure presets, their text modifiers, the failure arrival process and the maintenance plan.
#include "sim/failures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include "core/strings.h"

namespace cardiac::sim {
namespace {

constexpr double kNsPerDay = 86400e9;
constexpr DurationNs kHour = 3600 * kNsPerSec;
constexpr DurationNs kDay = 24 * kHour;

// Llama 3's 47 planned interruptions in 54 days on 2,048 nodes, as a per-node interval, so that
// the schedule scales with the cluster.
constexpr DurationNs kLlamaMaintenanceInterval = 54 * kDay / 47 * 2048;
constexpr DurationNs kMaintenanceDuration = 4 * kHour;
// One health-check period (Meta runs its checks every 5 minutes).
constexpr DurationNs kDetection = DurationNs{5} * 60 * kNsPerSec;
// Llama 3's 419 unexpected interruptions came in the hours the job was running: after each one
// the job was down for a detection period, and a failure then interrupted nothing. The preset's
// rates are per running GPU-day, so that a job held for 54 days sees 419 on average.
constexpr double kLlamaRunningGpuDays =
    (54.0 - 419.0 * static_cast<double>(kDetection) / kNsPerDay) * 16384.0;

// Seeds the independent random streams of one process from the user's seed (splitmix64).
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// [0, 1) from the top 53 bits: the standard fixes mt19937_64's output, so this is portable.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

std::uint32_t uniform_index(std::mt19937_64& rng, std::uint64_t n) {
  auto i = static_cast<std::uint64_t>(uniform01(rng) * static_cast<double>(n));
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(i, n - 1));
}

double standard_normal(std::mt19937_64& rng) {  // Box-Muller, one value per pair
  double u1 = 1.0 - uniform01(rng);             // (0, 1]: log stays finite
  double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

struct Row {
  const char* name;
  const char* category;
  double weight;  // a count (Llama 3) or a share (Meta mixes)
  Scope scope;
  double repair_hours;
};

// Llama 3 table 5, the counts (they sum to 419; the printed "Faulty GPU" 30.1% does not).
// Repair means are assumptions (docs/sim-failures.md says which and why).
constexpr Row kLlamaRows[] = {
    {"Faulty GPU", "GPU", 148, Scope::kGpu, 48},
    {"GPU HBM3 memory", "GPU", 72, Scope::kGpu, 19},
    {"Software bug", "Dependency", 54, Scope::kJob, 0},
    {"Network switch/cable", "Network", 35, Scope::kDomain, 4},
    {"Host maintenance", "Unplanned maintenance", 32, Scope::kNode, 8},
    {"GPU SRAM memory", "GPU", 19, Scope::kGpu, 19},
    {"GPU system processor (GSP)", "GPU", 17, Scope::kNode, 4},
    {"NIC", "Host", 7, Scope::kNode, 24},
    {"NCCL watchdog timeouts", "Unknown", 7, Scope::kJob, 0},
    {"Silent data corruption", "GPU", 6, Scope::kGpu, 72},
    {"GPU thermal interface + sensor", "GPU", 6, Scope::kGpu, 24},
    {"SSD", "Host", 3, Scope::kNode, 24},
    {"Power supply", "Host", 3, Scope::kNode, 24},
    {"Server chassis", "Host", 2, Scope::kNode, 72},
    {"IO expansion board", "Host", 2, Scope::kNode, 48},
    {"Dependency", "Dependency", 2, Scope::kJob, 0},
    {"CPU", "Host", 2, Scope::kNode, 72},
    {"System memory", "Host", 2, Scope::kNode, 24},
};

// Meta publishes totals only: the shares are Llama 3's infrastructure rows (356 of 419, the
// job-scope rows left out because r_f counts infrastructure failures), regrouped under the
// contributors Meta names as largest.
constexpr Row kMetaRows[] = {
    {"PCIe error / GPU off the bus (Xid 79)", "GPU", 148, Scope::kGpu, 48},
    {"GPU memory (uncorrectable ECC, row remap)", "GPU", 91, Scope::kGpu, 19},
    {"IB link", "Network", 35, Scope::kNode, 4},
    {"Filesystem mount", "Dependency", 32, Scope::kNode, 1},
    {"Other GPU (GSP, NVLink, thermal, SDC)", "GPU", 29, Scope::kGpu, 24},
    {"Host hardware (NIC, SSD, PSU, CPU, DIMM, chassis)", "Host", 21, Scope::kNode, 48},
};

Component make_component(const Row& row, double per_gpu_day) {
  return Component{row.name, row.category, per_gpu_day, row.scope,
                   static_cast<DurationNs>(row.repair_hours * static_cast<double>(kHour))};
}

FailureModel llama3() {
  FailureModel m;
  m.name = "llama3";
  for (const Row& row : kLlamaRows) {
    m.components.push_back(make_component(row, row.weight / kLlamaRunningGpuDays));
  }
  m.correlated_fraction = 0.03;
  m.detection = kDetection;
  m.maintenance_interval = kLlamaMaintenanceInterval;
  m.maintenance_duration = kMaintenanceDuration;
  return m;
}

// `per_node_day` is Meta's r_f (failures per node-day, 8 GPUs per node).
FailureModel meta(std::string name, double per_node_day, double correlated) {
  FailureModel m;
  m.name = std::move(name);
  double total_weight = 0;
  for (const Row& row : kMetaRows) total_weight += row.weight;
  for (const Row& row : kMetaRows) {
    m.components.push_back(make_component(row, per_node_day / 8.0 * row.weight / total_weight));
  }
  m.correlated_fraction = correlated;
  m.detection = kDetection;
  m.maintenance_interval = kLlamaMaintenanceInterval;
  m.maintenance_duration = kMaintenanceDuration;
  return m;
}

FailureModel rsc1_all() {
  FailureModel m = meta("rsc1-all", 6.50e-3, 0.03);
  // Meta measured 7.9 h MTTF for 1,024-GPU jobs: 24 / (128 x 7.9) failures per node-day in all.
  // What r_f does not count is put in one job-scope residual.
  double all_cause = 24.0 / (128.0 * 7.9);
  m.components.push_back(Component{"All-cause residual (software, user, unattributed)", "Unknown",
                                   (all_cause - 6.50e-3) / 8.0, Scope::kJob, 0});
  return m;
}

std::optional<FailureModel> builtin(std::string_view name) {
  if (name == "none") {
    FailureModel m;
    m.name = "none";
    return m;
  }
  if (name == "llama3") return llama3();
  if (name == "rsc1") return meta("rsc1", 6.50e-3, 0.03);
  if (name == "rsc1-all") return rsc1_all();
  if (name == "rsc2") return meta("rsc2", 2.34e-3, 0.05);
  return std::nullopt;
}

Status apply_modifier(FailureModel& m, std::string_view key, std::string_view value) {
  auto number = [&](double& out) -> Status {
    auto v = parse_double(value);
    if (!v || !std::isfinite(*v)) {
      return fail(Error::parse("'" + std::string(value) + "' is not a number", std::string(key)));
    }
    out = *v;
    return {};
  };
  auto duration = [&](DurationNs& out) -> Status {
    auto v = parse_duration_ns(value);
    if (!v || *v < 0) {
      return fail(Error::parse("'" + std::string(value) + "' is not a duration (e.g. 5m, 30d)",
                               std::string(key)));
    }
    out = *v;
    return {};
  };
  if (key == "lemons") {
    auto x = value.find_first_of("xX*");
    if (x == std::string_view::npos) {
      return fail(Error::parse("'" + std::string(value) + "' is not FRACTIONxFACTOR (e.g. 0.02x12)",
                               "lemons"));
    }
    auto fraction = parse_double(value.substr(0, x));
    auto factor = parse_double(value.substr(x + 1));
    if (!fraction || !factor) {
      return fail(Error::parse("'" + std::string(value) + "' is not FRACTIONxFACTOR (e.g. 0.02x12)",
                               "lemons"));
    }
    m.lemon_fraction = *fraction;
    m.lemon_factor = *factor;
    return {};
  }
  if (key == "scale") return number(m.rate_scale);
  if (key == "corr") return number(m.correlated_fraction);
  if (key == "repair_sigma") return number(m.repair_sigma);
  if (key == "detect") return duration(m.detection);
  if (key == "maint_len") return duration(m.maintenance_duration);
  if (key == "slow") {
    if (value == "typical") {
      m.slow.per_gpu_day = kTypicalFailSlowPerGpuDay;
      return {};
    }
    return number(m.slow.per_gpu_day);
  }
  if (key == "slow_factor") return number(m.slow.factor);
  if (key == "slow_detect") return duration(m.slow.detection);
  if (key == "slow_repair") return duration(m.slow.repair);
  if (key == "maint") {
    if (value == "off") {
      m.maintenance_interval = 0;
      return {};
    }
    return duration(m.maintenance_interval);
  }
  return fail(
      Error::parse("unknown modifier '" + std::string(key) +
                   "' (known: lemons, scale, corr, detect, maint, maint_len, repair_sigma, slow, "
                   "slow_factor, slow_detect, slow_repair)"));
}

}  // namespace

std::string_view scope_name(Scope scope) {
  switch (scope) {
    case Scope::kGpu:
      return "gpu";
    case Scope::kNode:
      return "node";
    case Scope::kDomain:
      return "domain";
    case Scope::kJob:
      return "job";
  }
  return "?";
}

Status validate_model(const FailureModel& m) {
  const std::string where = "failure model '" + m.name + "'";
  auto bad = [&](std::string msg) { return fail(Error::invalid(std::move(msg), where)); };
  for (const Component& c : m.components) {
    if (!std::isfinite(c.per_gpu_day) || c.per_gpu_day < 0) {
      return bad("component '" + c.name + "' has a rate that is not a finite number >= 0");
    }
    if (c.repair < 0) return bad("component '" + c.name + "' has a negative repair time");
  }
  auto in01 = [](double v) { return std::isfinite(v) && v >= 0 && v <= 1; };
  if (!in01(m.lemon_fraction)) return bad("lemon fraction must be in [0, 1]");
  if (!std::isfinite(m.lemon_factor) || m.lemon_factor < 1) return bad("lemon factor must be >= 1");
  if (!in01(m.correlated_fraction)) return bad("correlated fraction must be in [0, 1]");
  if (!std::isfinite(m.rate_scale) || m.rate_scale < 0) return bad("rate scale must be >= 0");
  if (!std::isfinite(m.repair_sigma) || m.repair_sigma < 0 || m.repair_sigma > 5) {
    return bad("repair sigma must be in [0, 5]");
  }
  if (m.detection < 0 || m.maintenance_interval < 0 || m.maintenance_duration < 0) {
    return bad("durations must be >= 0");
  }
  if (!std::isfinite(m.slow.per_gpu_day) || m.slow.per_gpu_day < 0) {
    return bad("fail-slow rate must be a finite number >= 0 (stragglers per GPU-day)");
  }
  if (!std::isfinite(m.slow.factor) || m.slow.factor < 1 || m.slow.factor > 100) {
    return bad("fail-slow factor must be in [1, 100] (how many times slower)");
  }
  if (m.slow.detection < 0 || m.slow.repair < 0) {
    return bad("fail-slow detection and repair must be >= 0");
  }
  return {};
}

std::vector<std::string_view> failure_preset_names() {
  return {"none", "llama3", "rsc1", "rsc1-all", "rsc2"};
}

Result<FailureModel> failure_preset(std::string_view text) {
  const std::string context = "failure preset '" + std::string(text) + "'";
  std::string_view trimmed = trim(text);
  auto colon = trimmed.find(':');
  std::string name = to_lower(trim(trimmed.substr(0, colon)));
  auto model = builtin(name);
  if (!model) {
    std::string known;
    for (auto n : failure_preset_names()) known += (known.empty() ? "" : ", ") + std::string(n);
    return fail(Error::parse("unknown preset '" + name + "' (known: " + known + ")", context));
  }
  if (colon != std::string_view::npos) {
    std::vector<std::string> seen;
    for (std::string_view piece : split(trimmed.substr(colon + 1), ',')) {
      piece = trim(piece);
      auto eq = piece.find('=');
      if (piece.empty() || eq == std::string_view::npos || eq == 0) {
        return fail(
            Error::parse("modifier '" + std::string(piece) + "' is not key=value", context));
      }
      std::string key = to_lower(trim(piece.substr(0, eq)));
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return fail(Error::parse("modifier '" + key + "' given twice", context));
      }
      seen.push_back(key);
      if (auto st = apply_modifier(*model, key, trim(piece.substr(eq + 1))); !st) {
        return fail(st.error().with_context(context));
      }
    }
    model->name = std::string(trimmed);
  }
  if (auto st = validate_model(*model); !st) {
    return fail(Error::parse(st.error().message, context));
  }
  return std::move(*model);
}

FailureProcess::FailureProcess(const FailureModel& model, const Topology& topology,
                               std::uint64_t seed, TimeNs horizon)
    : components_(model.components),
      topo_(topology),
      correlated_fraction_(model.correlated_fraction),
      repair_sigma_(model.repair_sigma),
      horizon_(horizon),
      arrivals_(derive_seed(seed, 0)),
      aux_(derive_seed(seed, 1)),
      repairs_(derive_seed(seed, 2)) {
  if (topo_.nodes_per_domain == 0) topo_.nodes_per_domain = 1;
  const double gpus = static_cast<double>(topo_.nodes) * topo_.gpus_per_node;
  std::vector<std::string> categories;
  category_.resize(components_.size());
  for (std::uint32_t i = 0; i < components_.size(); ++i) {
    const Component& c = components_[i];
    auto it = std::find(categories.begin(), categories.end(), c.category);
    category_[i] = static_cast<std::uint32_t>(it - categories.begin());
    if (it == categories.end()) {
      categories.push_back(c.category);
      by_category_.emplace_back();
    }
    double rate = c.per_gpu_day * model.rate_scale;
    if (!(rate > 0) || !std::isfinite(rate)) continue;
    total_per_day_ += rate * gpus;
    all_.cumulative.push_back(total_per_day_);
    all_.index.push_back(i);
    if (c.scope == Scope::kGpu || c.scope == Scope::kNode) {
      Picker& p = by_category_[category_[i]];
      p.cumulative.push_back((p.cumulative.empty() ? 0.0 : p.cumulative.back()) + rate);
      p.index.push_back(i);
    }
  }
  rate_per_ns_ = total_per_day_ / kNsPerDay;
  done_ = !(rate_per_ns_ > 0) || topo_.nodes == 0 || topo_.gpus_per_node == 0 || horizon <= 0;

  // The lemon set has its own stream, so it does not move when other settings change.
  auto lemon_count = static_cast<std::uint32_t>(
      std::llround(std::clamp(model.lemon_fraction, 0.0, 1.0) * topo_.nodes));
  std::vector<std::uint32_t> order(topo_.nodes);
  for (std::uint32_t i = 0; i < topo_.nodes; ++i) order[i] = i;
  std::mt19937_64 rng(derive_seed(seed, 3));
  for (std::uint32_t i = 0; i < lemon_count; ++i) {  // partial Fisher-Yates
    std::swap(order[i], order[i + uniform_index(rng, topo_.nodes - i)]);
  }
  lemons_.assign(order.begin(), order.begin() + lemon_count);
  nominal_.assign(order.begin() + lemon_count, order.end());
  std::sort(lemons_.begin(), lemons_.end());
  std::sort(nominal_.begin(), nominal_.end());
  double lemon_weight = lemon_count * model.lemon_factor;
  if (lemon_count > 0) lemon_probability_ = lemon_weight / (lemon_weight + nominal_.size());
}

std::uint32_t FailureProcess::pick_node(bool hardware) {
  // Lemons are bad hardware: software failures land uniformly.
  if (!hardware || lemons_.empty() || nominal_.empty()) {
    return uniform_index(arrivals_, topo_.nodes);
  }
  if (uniform01(arrivals_) < lemon_probability_) {
    return lemons_[uniform_index(arrivals_, lemons_.size())];
  }
  return nominal_[uniform_index(arrivals_, nominal_.size())];
}

DurationNs FailureProcess::sample_repair(const Component& c, std::mt19937_64& rng) {
  if (c.repair <= 0 || c.scope == Scope::kJob) return 0;
  if (repair_sigma_ <= 0) return c.repair;
  // Log-normal with the component's mean: exp(mu + sigma z), mu = ln(mean) - sigma^2 / 2.
  double s = repair_sigma_;
  double x = static_cast<double>(c.repair) * std::exp(s * standard_normal(rng) - s * s / 2);
  return static_cast<DurationNs>(std::clamp(x, 1.0, 9.0e18));
}

void FailureProcess::maybe_add_secondary(const FailureEvent& primary) {
  // Secondaries draw only from aux_, so the primary stream is the same whatever the fraction.
  double u = uniform01(aux_);
  if (!(u < correlated_fraction_)) return;
  std::uint32_t first = primary.domain * topo_.nodes_per_domain;
  std::uint32_t size = std::min(topo_.nodes - first, topo_.nodes_per_domain);
  const Picker& p = by_category_[category_[primary.component]];
  if (size < 2 || p.cumulative.empty()) return;
  std::uint32_t node = first + uniform_index(aux_, size - 1);
  if (node >= primary.node) ++node;
  double target = uniform01(aux_) * p.cumulative.back();
  auto at = std::upper_bound(p.cumulative.begin(), p.cumulative.end(), target);
  std::uint32_t component =
      p.index[std::min<std::size_t>(at - p.cumulative.begin(), p.index.size() - 1)];
  const Component& c = components_[component];
  FailureEvent ev{primary.time, component, c.scope, node, -1, primary.domain, 0, true};
  if (c.scope == Scope::kGpu) {
    ev.gpu = static_cast<std::int32_t>(uniform_index(aux_, topo_.gpus_per_node));
  }
  ev.repair = sample_repair(c, aux_);
  pending_ = ev;
}

std::optional<FailureEvent> FailureProcess::next() {
  if (pending_) return std::exchange(pending_, std::nullopt);
  if (done_) return std::nullopt;
  // Time is kept in double nanoseconds and floored, so rounding never reorders events.
  now_ns_ += -std::log1p(-uniform01(arrivals_)) / rate_per_ns_;
  if (!(now_ns_ < static_cast<double>(horizon_))) {
    done_ = true;
    return std::nullopt;
  }
  double target = uniform01(arrivals_) * all_.cumulative.back();
  auto at = std::upper_bound(all_.cumulative.begin(), all_.cumulative.end(), target);
  std::uint32_t component =
      all_.index[std::min<std::size_t>(at - all_.cumulative.begin(), all_.index.size() - 1)];
  const Component& c = components_[component];
  const bool hardware = c.scope != Scope::kJob;
  FailureEvent ev;
  ev.time = std::min(static_cast<TimeNs>(now_ns_), horizon_ - 1);
  ev.component = component;
  ev.scope = c.scope;
  ev.node = pick_node(hardware);
  if (c.scope == Scope::kGpu) {
    ev.gpu = static_cast<std::int32_t>(uniform_index(arrivals_, topo_.gpus_per_node));
  }
  ev.domain = ev.node / topo_.nodes_per_domain;
  ev.repair = sample_repair(c, repairs_);
  if (c.scope == Scope::kGpu || c.scope == Scope::kNode) maybe_add_secondary(ev);
  return ev;
}

double job_mttf_hours(const FailureModel& model, unsigned gpus, unsigned gpus_per_node) {
  if (gpus_per_node == 0) gpus_per_node = 1;
  // Whole nodes: node- and domain-scope parts fail for every GPU of the nodes the job touches.
  const unsigned nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
  const double node_gpus = static_cast<double>(nodes) * gpus_per_node;
  double per_day = 0;
  for (const Component& c : model.components) {
    bool whole_nodes = c.scope == Scope::kNode || c.scope == Scope::kDomain;
    per_day += c.per_gpu_day * model.rate_scale * (whole_nodes ? node_gpus : gpus);
  }
  if (!(per_day > 0)) return std::numeric_limits<double>::infinity();
  return 24.0 / per_day;
}

FailSlowProcess::FailSlowProcess(const FailureModel& model, const Topology& topology,
                                 std::uint64_t seed, TimeNs horizon)
    : topo_(topology),
      repair_(model.slow.repair),
      repair_sigma_(model.repair_sigma),
      horizon_(horizon),
      rng_(derive_seed(seed, 5)) {
  const double gpus = static_cast<double>(topo_.nodes) * topo_.gpus_per_node;
  rate_per_ns_ = model.slow.per_gpu_day * gpus / kNsPerDay;
  done_ = !(rate_per_ns_ > 0) || !std::isfinite(rate_per_ns_) || horizon <= 0;
}

std::optional<SlowEvent> FailSlowProcess::next() {
  if (done_) return std::nullopt;
  now_ns_ += -std::log1p(-uniform01(rng_)) / rate_per_ns_;
  if (!(now_ns_ < static_cast<double>(horizon_))) {
    done_ = true;
    return std::nullopt;
  }
  SlowEvent ev;
  ev.time = std::min(static_cast<TimeNs>(now_ns_), horizon_ - 1);
  ev.node = uniform_index(rng_, topo_.nodes);
  ev.gpu = uniform_index(rng_, topo_.gpus_per_node);
  // The same log-normal spread as the fail-stop repairs, drawn whatever the settings so that
  // the arrival times do not depend on them.
  const double z = standard_normal(rng_);
  const double s = repair_sigma_;
  if (repair_ <= 0) {
    ev.repair = 0;
  } else if (s <= 0) {
    ev.repair = repair_;
  } else {
    const double x = static_cast<double>(repair_) * std::exp(s * z - s * s / 2);
    ev.repair = static_cast<DurationNs>(std::clamp(x, 1.0, 9.0e18));
  }
  return ev;
}

std::vector<MaintenanceWindow> maintenance_schedule(const FailureModel& model,
                                                    const Topology& topology, std::uint64_t seed,
                                                    TimeNs horizon) {
  std::vector<MaintenanceWindow> out;
  if (model.maintenance_interval <= 0 || model.maintenance_duration <= 0 || topology.nodes == 0) {
    return out;
  }
  std::mt19937_64 rng(derive_seed(seed, 4));
  std::vector<std::uint32_t> order(topology.nodes);
  for (std::uint32_t i = 0; i < topology.nodes; ++i) order[i] = i;
  for (std::uint32_t i = topology.nodes - 1; i > 0; --i) {
    std::swap(order[i], order[uniform_index(rng, i + 1)]);
  }
  // A rolling plan: one node every interval/nodes, so drains never bunch up.
  const double interval = static_cast<double>(model.maintenance_interval);
  const double slot = interval / topology.nodes;
  const double phase = uniform01(rng) * slot;
  for (std::uint32_t rank = 0; rank < topology.nodes; ++rank) {
    // The running sum is part of the seeded schedule: the same seed gives the same instants.
    // NOLINTNEXTLINE(bugprone-float-loop-counter)
    for (double t = phase + rank * slot; t < static_cast<double>(horizon); t += interval) {
      out.push_back({static_cast<TimeNs>(t), order[rank], model.maintenance_duration});
    }
  }
  std::sort(out.begin(), out.end(), [](const MaintenanceWindow& a, const MaintenanceWindow& b) {
    return a.start != b.start ? a.start < b.start : a.node < b.node;
  });
  return out;
}

}  // namespace cardiac::sim
