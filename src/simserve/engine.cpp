// SPDX-License-Identifier: Apache-2.0
// The driver: arrivals in time order, each routed to the least-loaded replica after every
// replica has made the decisions due before it; then the per-request times become the report.
#include "simserve/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/format.h"
#include "core/strings.h"
#include "simserve/replica.h"

namespace cardiac::simserve {
namespace {

using detail::Live;
using detail::Replica;
using detail::Shared;
using detail::State;

constexpr std::size_t kMaxReportedSamples = 400;

// Nearest rank; sorts part of `v`.
double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  rank = std::clamp<std::size_t>(rank, 1, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank), v.end());
  return v[rank];
}

Percentiles summarize(std::vector<double>& v) {
  Percentiles p;
  p.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) return p;
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  p.p50 = percentile(v, 0.5);
  p.p99 = percentile(v, 0.99);
  return p;
}

Status validate(const EngineConfig& c) {
  auto bad = [](std::string why) { return fail(Error::invalid(std::move(why), "sim serve")); };
  if (c.replicas < 1) return bad("no replica: the GPUs must be at least one tensor-parallel group");
  if (c.kv_tokens < c.block_tokens) {
    return bad(fmt::format("the KV cache holds {} tokens per replica: nothing to serve with",
                           c.kv_tokens));
  }
  if (c.max_batch < 1) return bad("--max-batch must be at least 1");
  if (c.block_tokens < 1) return bad("the block size must be at least 1 token");
  if (c.max_batched_tokens < 1) return bad("--max-batched-tokens must be at least 1");
  if (c.policy.batching == Batching::kContinuous && c.chunked_prefill &&
      c.max_batched_tokens <= c.max_batch) {
    return bad(fmt::format(
        "--max-batched-tokens {} must exceed --max-batch {}: a chunked step holds one token of "
        "every running request and what is left for prompts",
        c.max_batched_tokens, c.max_batch));
  }
  if (!(c.batch_timeout_s >= 0)) return bad("--batch-timeout must not be negative");
  if (c.classes.empty() || c.classes.size() > 255) return bad("between 1 and 255 classes");
  if (!(c.cost.peak_flops > 0) || !(c.cost.bandwidth > 0)) {
    return bad("the GPU's FLOP/s and bandwidth (times the efficiencies) must be positive");
  }
  return {};
}

}  // namespace

std::string Policy::name() const {
  return fmt::format("{}-{}", batching == Batching::kStatic ? "static" : "continuous",
                     kv == KvMode::kReserved ? "reserved" : "paged");
}

Result<Policy> parse_policy(std::string_view name) {
  for (const Policy& p : all_policies()) {
    if (p.name() == to_lower(name)) return p;
  }
  if (to_lower(name) == "static") return Policy{Batching::kStatic, KvMode::kReserved};
  if (to_lower(name) == "continuous") return Policy{Batching::kContinuous, KvMode::kPaged};
  return fail(
      Error::invalid("expected static, continuous, or one of static-reserved, static-paged, "
                     "continuous-reserved, continuous-paged",
                     fmt::format("--policy '{}'", name)));
}

std::vector<Policy> all_policies() {
  return {{Batching::kStatic, KvMode::kReserved},
          {Batching::kStatic, KvMode::kPaged},
          {Batching::kContinuous, KvMode::kReserved},
          {Batching::kContinuous, KvMode::kPaged}};
}

Result<ServeResult> simulate(const EngineConfig& config, const std::vector<Request>& requests,
                             const Progress& progress) {
  if (auto v = validate(config); !v) return fail(v.error());
  if (requests.empty()) return fail(Error::invalid("no requests to simulate", "sim serve"));
  if (requests.size() >= std::numeric_limits<std::uint32_t>::max()) {
    return fail(Error::invalid("more than 4 billion requests", "sim serve"));
  }
  Shared s{config, requests, {}, 0, 1, {}, {}};
  s.live.resize(requests.size());
  std::int64_t longest = 0;
  for (const Request& r : requests) {
    longest = std::max<std::int64_t>(longest, std::int64_t{r.prompt} + r.output);
  }
  s.reserve = config.max_seq_len > 0 ? config.max_seq_len : longest;
  if (config.policy.kv == KvMode::kReserved && s.reserve > config.kv_tokens) {
    return fail(Error::invalid(
        fmt::format("the KV cache holds {} tokens per replica, less than the {} a request reserves "
                    "(--max-seq-len)",
                    config.kv_tokens, s.reserve),
        "sim serve"));
  }
  // About 200 samples over the run: the arrivals' span, or when they come at once, a lower
  // bound of the time the work takes (every token in one compute-bound step per replica).
  double tokens = 0;
  for (const Request& r : requests) tokens += static_cast<double>(r.prompt) + r.output;
  const double work = config.cost.step(tokens, 0, 0) / config.replicas;
  const double last_arrival = requests.back().arrival;
  s.interval = config.sample_interval_s > 0 ? config.sample_interval_s
                                            : std::max({last_arrival, work, 1e-3}) / 200;
  std::vector<Replica> replicas;
  replicas.reserve(static_cast<std::size_t>(config.replicas));
  for (int i = 0; i < config.replicas; ++i) replicas.emplace_back(s);

  const std::int64_t capacity_tokens =
      config.policy.kv == KvMode::kPaged
          ? config.kv_tokens / config.block_tokens * config.block_tokens
          : config.kv_tokens;
  const std::size_t n = requests.size();
  const std::size_t tick = std::max<std::size_t>(n / 100, 1);
  std::int64_t rejected = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Request& r = requests[i];
    const std::int64_t total = std::int64_t{r.prompt} + r.output;
    if (total > s.reserve || total > capacity_tokens) {
      s.live[i].state = State::kRejected;
      ++rejected;
      continue;
    }
    Replica* best = nullptr;
    for (Replica& rep : replicas) {
      rep.advance_until(r.arrival);
      if (best == nullptr || rep.load() < best->load()) best = &rep;
    }
    best->enqueue(static_cast<std::uint32_t>(i), r.arrival);
    if (progress && i % tick == 0) progress(static_cast<double>(i) / static_cast<double>(n));
    if (!s.broken.empty()) break;
  }
  for (Replica& rep : replicas) rep.advance_until(std::numeric_limits<double>::infinity());
  if (!s.broken.empty()) {
    return fail(Error::internal(fmt::format("KV cache accounting check failed {}", s.broken)));
  }
  if (progress) progress(1.0);

  ServeResult out;
  out.policy = config.policy.name();
  out.requests = static_cast<std::int64_t>(n);
  out.rejected = rejected;
  out.kv_budget_tokens = capacity_tokens;
  const double first = requests.front().arrival;
  double last = first;
  std::vector<double> ttft, tpot, e2e, wait;
  std::vector<std::vector<double>> cttft(config.classes.size()), ctpot(config.classes.size()),
      ce2e(config.classes.size());
  std::vector<std::int64_t> met(config.classes.size(), 0);
  double wait_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Live& l = s.live[i];
    if (l.state != State::kDone) continue;
    const Request& r = requests[i];
    const ServiceClass& cls = config.classes[r.cls];
    ++out.completed;
    out.input_tokens += r.prompt;
    out.output_tokens += r.output;
    last = std::max(last, l.finish);
    const double t1 = l.first_token - r.arrival;
    const double total = l.finish - r.arrival;
    ttft.push_back(t1);
    e2e.push_back(total);
    wait.push_back(l.wait);
    wait_sum += l.wait;
    cttft[r.cls].push_back(t1);
    ce2e[r.cls].push_back(total);
    bool ok = !cls.ttft_s || t1 <= *cls.ttft_s;
    if (r.output > 1) {
      const double per = (l.finish - l.first_token) / (r.output - 1);
      tpot.push_back(per);
      ctpot[r.cls].push_back(per);
      ok = ok && (!cls.tpot_s || per <= *cls.tpot_s);
    }
    if (ok) ++met[r.cls];
  }
  for (Replica& rep : replicas) rep.finish_samples(last);
  out.makespan_s = last - first;
  const double span = out.makespan_s > 0 ? out.makespan_s : 1;
  out.input_tps = static_cast<double>(out.input_tokens) / span;
  out.output_tps = static_cast<double>(out.output_tokens) / span;
  out.ttft = summarize(ttft);
  out.tpot = summarize(tpot);
  out.e2e = summarize(e2e);
  out.queue_wait = summarize(wait);
  double busy = 0, used = 0, alloc = 0, area = 0, slots = 0, useful = 0, row_steps = 0;
  std::int64_t decode_steps = 0;
  for (const Replica& rep : replicas) {
    busy += rep.busy;
    used += rep.used_area;
    alloc += rep.alloc_area;
    area += rep.queue_area;
    slots += rep.slots;
    useful += rep.useful;
    row_steps += rep.row_steps;
    decode_steps += rep.decode_steps;
    out.preemptions += rep.preemptions;
    out.steps += rep.steps_run;
    out.kv_peak_allocated_tokens = std::max(out.kv_peak_allocated_tokens, rep.peak_alloc_tokens);
  }
  const double replica_time = span * config.replicas;
  out.gpu_busy = busy / replica_time;
  out.mean_batch = decode_steps > 0 ? row_steps / static_cast<double>(decode_steps) : 0;
  out.kv_used_tokens = used / replica_time;
  out.kv_allocated_tokens = alloc / replica_time;
  out.kv_waste = alloc > 0 ? 1 - used / alloc : 0;
  out.padding_waste = slots > 0 ? 1 - useful / slots : 0;
  // The queue's clock starts at 0, as the samples' does.
  const double horizon = last > 0 ? last : 1;
  out.little_l = area / horizon;
  out.little_lambda = static_cast<double>(out.completed) / horizon;
  out.little_w = out.completed > 0 ? wait_sum / static_cast<double>(out.completed) : 0;
  // Samples up to the last event, thinned to a few hundred points for the reports.
  auto count = static_cast<std::size_t>(std::floor(last / s.interval)) + 1;
  count = std::min(count, s.samples.size());
  const std::size_t stride = (count + kMaxReportedSamples - 1) / kMaxReportedSamples;
  out.sample_interval_s = s.interval * static_cast<double>(std::max<std::size_t>(stride, 1));
  for (std::size_t i = 0; i < count; i += std::max<std::size_t>(stride, 1)) {
    out.queue.push_back(s.samples[i]);
  }
  for (std::size_t c = 0; c < config.classes.size(); ++c) {
    ClassResult cr;
    cr.name = config.classes[c].name;
    cr.requests = static_cast<std::int64_t>(ce2e[c].size());
    cr.ttft = summarize(cttft[c]);
    cr.tpot = summarize(ctpot[c]);
    cr.e2e = summarize(ce2e[c]);
    if (config.classes[c].ttft_s || config.classes[c].tpot_s) {
      cr.slo_met =
          cr.requests > 0 ? static_cast<double>(met[c]) / static_cast<double>(cr.requests) : 0;
    }
    out.classes.push_back(std::move(cr));
  }
  return out;
}

}  // namespace cardiac::simserve
