// SPDX-License-Identifier: Apache-2.0
// Counting, merging and the derived figures.
#include "failstats/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace cardiac::failstats {
namespace {

constexpr double kNsPerHour = 3600e9;
constexpr double kMinRepairHours = 1.0 / 3600;  // one second
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

void add_counts(ClassCounts& into, const ClassCounts& other) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += other[i];
}

// The q-quantile of sorted values, linear between the two nearest ranks.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

// ln L of Poisson counts at one rate, without the ln(c!) terms that cancel in a ratio.
double log_likelihood(double count, double exposure) {
  if (count <= 0 || exposure <= 0) return 0;
  return count * std::log(count / exposure) - count;
}

}  // namespace

void RepairSums::add(double repair_hours) {
  double h = std::max(repair_hours, kMinRepairHours);
  ++n;
  sum_hours += h;
  double l = std::log(h);
  sum_log += l;
  sum_log2 += l * l;
  hours.push_back(h);
}

void RepairSums::merge(const RepairSums& other) {
  n += other.n;
  sum_hours += other.sum_hours;
  sum_log += other.sum_log;
  sum_log2 += other.sum_log2;
  hours.insert(hours.end(), other.hours.begin(), other.hours.end());
}

std::uint64_t total(const ClassCounts& c) {
  return std::accumulate(c.begin(), c.end(), std::uint64_t{0});
}

std::uint64_t hardware_total(const ClassCounts& c) {
  return total(c) - c[static_cast<std::size_t>(FaultClass::kSoftware)];
}

Result<FailureStats> tabulate(const std::vector<IncidentRecord>& incidents,
                              const std::vector<NodeExposure>& nodes, TimeNs start, TimeNs end) {
  FailureStats s;
  s.window_start = start;
  s.window_end = end;
  std::map<std::string, std::size_t> node_index;
  for (const NodeExposure& e : nodes) {
    if (!(e.gpu_days >= 0) || !std::isfinite(e.gpu_days)) {
      return fail(Error::invalid("GPU-days must be a finite number >= 0", "node " + e.node));
    }
    auto [it, added] = node_index.emplace(e.node, 0);
    if (added) {
      NodeStats n;
      n.node = e.node;
      s.nodes.push_back(std::move(n));
    }
    s.gpus += e.gpus;
    s.gpu_days += e.gpu_days;
  }
  std::sort(s.nodes.begin(), s.nodes.end(),
            [](const NodeStats& a, const NodeStats& b) { return a.node < b.node; });
  for (std::size_t i = 0; i < s.nodes.size(); ++i) node_index[s.nodes[i].node] = i;
  for (const NodeExposure& e : nodes) {
    NodeStats& n = s.nodes[node_index[e.node]];
    n.gpus += e.gpus;
    n.gpu_days += e.gpu_days;
  }
  std::map<std::pair<std::string, std::string>, GpuStats> gpus;
  for (const IncidentRecord& i : incidents) {
    auto at = node_index.find(i.node);
    if (at == node_index.end()) {
      return fail(
          Error::invalid("an incident on node '" + i.node + "', which the exposure does not list"));
    }
    NodeStats& n = s.nodes[at->second];
    const auto c = static_cast<std::size_t>(i.fault_class);
    ++s.counts[c];
    ++n.counts[c];
    GpuStats* g = nullptr;
    if (!i.gpu.empty()) {
      g = &gpus[{i.node, i.gpu}];
      g->gpu = i.gpu;
      g->node = i.node;
      g->gpu_days = n.gpus > 0 ? n.gpu_days / n.gpus : 0;
      ++g->counts[c];
    }
    if (i.fault_class == FaultClass::kSoftware) continue;  // nothing to repair
    if (!i.end) {
      ++s.open;
      continue;
    }
    double hours = static_cast<double>(*i.end - i.start) / kNsPerHour;
    s.repairs[c].add(hours);
    n.repair.add(hours);
    if (g != nullptr) g->repair.add(hours);
  }
  for (auto& [key, g] : gpus) s.gpu_list.push_back(std::move(g));
  return s;
}

void merge_into(FailureStats& into, const FailureStats& other) {
  const bool empty = into.nodes.empty() && into.gpu_days == 0 && total(into.counts) == 0;
  into.window_start = empty ? other.window_start : std::min(into.window_start, other.window_start);
  into.window_end = empty ? other.window_end : std::max(into.window_end, other.window_end);
  into.gpu_days += other.gpu_days;
  into.gpus += other.gpus;
  add_counts(into.counts, other.counts);
  for (std::size_t c = 0; c < kFaultClassCount; ++c) into.repairs[c].merge(other.repairs[c]);
  into.open += other.open;
  for (const NodeStats& n : other.nodes) {
    auto it = std::find_if(into.nodes.begin(), into.nodes.end(),
                           [&](const NodeStats& x) { return x.node == n.node; });
    if (it == into.nodes.end()) {
      into.nodes.push_back(n);
      continue;
    }
    // The same node in two files: two windows of its history.
    it->gpus = std::max(it->gpus, n.gpus);
    it->gpu_days += n.gpu_days;
    add_counts(it->counts, n.counts);
    it->repair.merge(n.repair);
  }
  std::sort(into.nodes.begin(), into.nodes.end(),
            [](const NodeStats& a, const NodeStats& b) { return a.node < b.node; });
  for (const GpuStats& g : other.gpu_list) {
    auto it = std::find_if(into.gpu_list.begin(), into.gpu_list.end(),
                           [&](const GpuStats& x) { return x.gpu == g.gpu && x.node == g.node; });
    if (it == into.gpu_list.end()) {
      into.gpu_list.push_back(g);
      continue;
    }
    it->gpu_days += g.gpu_days;
    add_counts(it->counts, g.counts);
    it->repair.merge(g.repair);
  }
  into.sources.insert(into.sources.end(), other.sources.begin(), other.sources.end());
}

RateFigures rate_figures(std::uint64_t count, double gpu_days, double units) {
  RateFigures r;
  r.count = count;
  r.gpu_days = gpu_days;
  if (!(gpu_days > 0)) {
    r.per_1000 = r.per_1000_low = r.per_1000_high = kNaN;
    r.mtbi_hours = r.mtbi_low = r.mtbi_high = kNaN;
    return r;
  }
  const Interval ci = poisson_interval(static_cast<double>(count));
  r.per_1000 = 1000.0 * static_cast<double>(count) / gpu_days;
  r.per_1000_low = 1000.0 * ci.low / gpu_days;
  r.per_1000_high = 1000.0 * ci.high / gpu_days;
  const double unit_hours = 24.0 * gpu_days / std::max(units, 1.0);
  auto mtbi = [&](double k) { return k > 0 ? unit_hours / k : kInfinity; };
  r.mtbi_hours = mtbi(static_cast<double>(count));
  r.mtbi_low = mtbi(ci.high);
  r.mtbi_high = mtbi(ci.low);
  return r;
}

RepairFigures repair_figures(const RepairSums& r) {
  RepairFigures f;
  f.n = r.n;
  if (r.n == 0) {
    f.mean_hours = f.median_hours = f.p90_hours = f.mu = f.sigma = kNaN;
    return f;
  }
  const auto n = static_cast<double>(r.n);
  f.mean_hours = r.sum_hours / n;
  f.mu = r.sum_log / n;
  f.sigma = std::sqrt(std::max(0.0, r.sum_log2 / n - f.mu * f.mu));
  std::vector<double> sorted = r.hours;
  std::sort(sorted.begin(), sorted.end());
  f.median_hours = quantile(sorted, 0.5);
  f.p90_hours = quantile(sorted, 0.9);
  return f;
}

Lemons estimate_lemons(const FailureStats& s) {
  Lemons out;
  struct NodeRate {
    double count = 0;
    double exposure = 0;
  };
  std::vector<NodeRate> nodes;
  for (const NodeStats& n : s.nodes) {
    if (n.gpu_days > 0) {
      nodes.push_back({static_cast<double>(hardware_total(n.counts)), n.gpu_days});
    }
  }
  if (nodes.size() < 2) return out;
  double count_all = 0;
  double exposure_all = 0;
  for (const NodeRate& n : nodes) {
    count_all += n.count;
    exposure_all += n.exposure;
  }
  if (count_all <= 0) return out;
  // Poisson dispersion test: with one rate for all nodes, sum (c - m)^2 / m is chi-square with
  // N - 1 degrees of freedom. Ranking nodes by their counts and splitting them finds "lemons"
  // in any Poisson draw, so the split is only looked for when the counts are overdispersed.
  const double rate = count_all / exposure_all;
  double dispersion = 0;
  for (const NodeRate& n : nodes) {
    const double m = rate * n.exposure;
    dispersion += (n.count - m) * (n.count - m) / m;
  }
  const double dof = static_cast<double>(nodes.size() - 1);
  out.dispersion_p = 1.0 - gamma_p(dof / 2, dispersion / 2);
  if (!(out.dispersion_p < kLemonTestLevel)) return out;

  // A two-rate mixture, as the simulator draws it: each node is a lemon with chance f, at rate
  // high, else at rate low. Maximum likelihood by EM, started from the best split of the nodes
  // ranked by rate.
  std::sort(nodes.begin(), nodes.end(), [](const NodeRate& a, const NodeRate& b) {
    return a.count * b.exposure > b.count * a.exposure;
  });
  double best = -1;
  std::size_t best_k = 1;
  double top_count = 0;
  double top_exposure = 0;
  for (std::size_t k = 1; k < nodes.size(); ++k) {
    top_count += nodes[k - 1].count;
    top_exposure += nodes[k - 1].exposure;
    double ll = log_likelihood(top_count, top_exposure) +
                log_likelihood(count_all - top_count, exposure_all - top_exposure);
    if (ll > best) {
      best = ll;
      best_k = k;
    }
  }
  const double floor_rate = 1e-9 * rate;  // keeps the logs finite when a side has no failures
  double f = static_cast<double>(best_k) / static_cast<double>(nodes.size());
  double high = 0;
  double low = 0;
  {
    double c = 0;
    double e = 0;
    for (std::size_t k = 0; k < best_k; ++k) {
      c += nodes[k].count;
      e += nodes[k].exposure;
    }
    high = std::max(c / e, floor_rate);
    low = std::max((count_all - c) / (exposure_all - e), floor_rate);
  }
  std::vector<double> w(nodes.size());
  for (int iteration = 0; iteration < kLemonIterations; ++iteration) {
    double sum_w = 0;
    double wc = 0;
    double we = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const NodeRate& n = nodes[i];
      // log P(c | rate) up to the ln(c!) both sides share.
      const double lh = std::log(f) + n.count * std::log(high * n.exposure) - high * n.exposure;
      const double ll = std::log1p(-f) + n.count * std::log(low * n.exposure) - low * n.exposure;
      w[i] = 1.0 / (1.0 + std::exp(ll - lh));
      sum_w += w[i];
      wc += w[i] * n.count;
      we += w[i] * n.exposure;
    }
    const double next_f = sum_w / static_cast<double>(nodes.size());
    if (!(next_f > 0 && next_f < 1) || !(we > 0) || !(exposure_all - we > 0)) break;
    const double next_high = std::max(wc / we, floor_rate);
    const double next_low = std::max((count_all - wc) / (exposure_all - we), floor_rate);
    const bool settled = std::abs(next_f - f) < 1e-12 &&
                         std::abs(next_high - high) < 1e-12 * high &&
                         std::abs(next_low - low) < 1e-12 * high;
    f = next_f;
    high = next_high;
    low = next_low;
    if (settled) break;
  }
  if (high < low) {  // the minority turned out to be the good nodes
    std::swap(high, low);
    f = 1 - f;
    for (double& x : w) x = 1 - x;
  }
  double mixture = 0;
  double lemon_count = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeRate& n = nodes[i];
    const double lh = std::log(f) + n.count * std::log(high * n.exposure) - high * n.exposure;
    const double ll = std::log1p(-f) + n.count * std::log(low * n.exposure) - low * n.exposure;
    const double top = std::max(lh, ll);
    mixture += top + std::log(std::exp(lh - top) + std::exp(ll - top));
    lemon_count += w[i] * n.count;
  }
  // ln L of one rate, in the same terms (sum of c ln(rate e) - rate e).
  double one = 0;
  for (const NodeRate& n : nodes) {
    one += n.count * std::log(rate * n.exposure) - rate * n.exposure;
  }
  out.likelihood_ratio = 2 * (mixture - one);
  out.fraction = f;
  out.factor = std::clamp(high / low, 1.0, kMaxLemonFactor);
  out.nodes = static_cast<unsigned>(std::lround(f * static_cast<double>(nodes.size())));
  out.share = lemon_count / count_all;
  return out;
}

std::vector<Row> rows(const FailureStats& s, By by) {
  std::vector<Row> out;
  switch (by) {
    case By::kClass:
      for (FaultClass c : kFaultClasses) {
        const auto i = static_cast<std::size_t>(c);
        out.push_back({std::string(class_name(c)), std::string(class_title(c)),
                       rate_figures(s.counts[i], s.gpu_days, s.gpus),
                       repair_figures(s.repairs[i])});
      }
      break;
    case By::kNode:
      for (const NodeStats& n : s.nodes) {
        out.push_back({n.node, "", rate_figures(total(n.counts), n.gpu_days, n.gpus),
                       repair_figures(n.repair)});
      }
      break;
    case By::kGpu:
      for (const GpuStats& g : s.gpu_list) {
        out.push_back({g.gpu, g.node, rate_figures(total(g.counts), g.gpu_days, 1),
                       repair_figures(g.repair)});
      }
      break;
  }
  return out;
}

Row overall(const FailureStats& s) {
  RepairSums all;
  for (const RepairSums& r : s.repairs) all.merge(r);
  return {"all", "All classes", rate_figures(total(s.counts), s.gpu_days, s.gpus),
          repair_figures(all)};
}

}  // namespace cardiac::failstats
