// SPDX-License-Identifier: Apache-2.0
// The serving simulation against closed forms: static padding waste, equal throughput of static
// and continuous batching at saturation with uniform lengths, Little's law on the queue, the KV
// budget, determinism, and the roofline's span sums against step-by-step sums.
#include "simserve/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "plan/gpus.h"
#include "simserve/report.h"

namespace cardiac::simserve {
namespace {

CostModel llama_h100(int tp = 1) {
  return make_cost_model(*plan::find_preset("Llama-3.1-8B"), plan::DType::kBf16, plan::DType::kBf16,
                         *plan::find_gpu_perf("H100-80GB"), tp, {});
}

EngineConfig config(Policy p) {
  EngineConfig c;
  c.policy = p;
  c.cost = llama_h100();
  c.kv_tokens = 400000;
  c.check_invariants = true;
  return c;
}

std::vector<Request> at_zero(int n, std::int32_t prompt, std::int32_t output) {
  return std::vector<Request>(static_cast<std::size_t>(n), Request{0, prompt, output, 0});
}

std::vector<Request> poisson(double rate, std::uint64_t n, const char* prompt, const char* output,
                             std::uint64_t seed = 1) {
  PoissonWorkload w{rate, n, *parse_length(prompt, "p"), *parse_length(output, "o"), seed};
  return generate(w, EngineConfig{}.classes);
}

const Policy kStaticReserved{Batching::kStatic, KvMode::kReserved};
const Policy kContReserved{Batching::kContinuous, KvMode::kReserved};
const Policy kContPaged{Batching::kContinuous, KvMode::kPaged};

TEST(ServeRoofline, SpanIsTheSumOfItsSteps) {
  const CostModel c = llama_h100();
  for (double batch : {1.0, 7.0, 64.0, 256.0}) {
    for (double ctx : {0.0, 1000.0, 300000.0}) {
      double sum = 0;
      for (int k = 0; k < 3000; ++k) sum += c.decode(batch, ctx + k * batch);
      EXPECT_NEAR(c.decode_span(batch, ctx, 3000), sum, sum * 1e-9) << batch << " " << ctx;
      const double dt = sum / 3;
      const std::int64_t n = c.steps_to_reach(batch, ctx, dt, 3000);
      EXPECT_GE(c.decode_span(batch, ctx, n), dt);
      EXPECT_LT(c.decode_span(batch, ctx, n - 1), dt);
    }
  }
  // Compute-bound prefill against memory-bound decode, where both terms cross inside a span.
  CostModel x = c;
  x.flops_per_pair = 1e9;
  double sum = 0;
  for (int k = 0; k < 500; ++k) sum += x.decode(4, 100 + k * 4.0);
  EXPECT_NEAR(x.decode_span(4, 100, 500), sum, sum * 1e-9);
}

TEST(ServeRoofline, HandComputedStepsOfLlama8BOnH100) {
  const CostModel c = llama_h100();
  // 8.03 B parameters in bf16 = 16.06 GB read per step at 0.8 × 3.35 TB/s: 5.99 ms.
  EXPECT_NEAR(c.decode(1, 0), 16.06e9 / (0.8 * 3.35e12), 0.02e-3);
  // 512 prompt tokens: 2 × 8.03e9 × 512 FLOPs (+ attention) at 0.6 × 989.4 TFLOP/s: 13.9 ms.
  const double attention = 4.0 * 32 * 32 * 128 * (512.0 * 513 / 2);
  EXPECT_NEAR(c.step(512, 512.0 * 513 / 2, 512),
              (2 * 8.0302e9 * 512 + attention) / (0.6 * 989.4e12), 0.05e-3);
}

// Static batching pads every row to the batch's longest: 1 - mean / max of the output lengths.
TEST(ServeStaticBatching, PaddingWasteIsOneMinusMeanOverMax) {
  // Batches of 16: one answer of 2,048 tokens and fifteen that bring the mean to 200.
  std::vector<Request> reqs;
  for (int b = 0; b < 4; ++b) {
    reqs.push_back({0, 100, 2048, 0});
    for (int i = 0; i < 15; ++i) reqs.push_back({0, 100, i < 14 ? 77 : 74, 0});
  }
  EngineConfig c = config(kStaticReserved);
  c.max_batch = 16;
  auto r = simulate(c, reqs);
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_NEAR(r->padding_waste, 1 - 200.0 / 2048, 1e-9);
  EXPECT_NEAR(r->padding_waste, 0.90, 0.005);

  // Random lengths: the same closed form batch by batch (all arrive at once, in order).
  auto random = poisson(1e9, 320, "100", "lognormal:200:2048");
  for (auto& q : random) q.arrival = 0;
  r = simulate(c, random);
  ASSERT_TRUE(r);
  double useful = 0;
  double slots = 0;
  for (std::size_t b = 0; b < random.size(); b += 16) {
    std::int32_t longest = 0;
    for (std::size_t i = b; i < b + 16; ++i) {
      useful += random[i].output;
      longest = std::max(longest, random[i].output);
    }
    slots += 16.0 * longest;
  }
  EXPECT_NEAR(r->padding_waste, 1 - useful / slots, 1e-9);
  EXPECT_GT(r->padding_waste, 0.5);

  c.policy = kContPaged;
  r = simulate(c, random);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->padding_waste, 0);
}

// With every request the same length and the queue never empty, a continuous batch fills and
// drains in lockstep: it is a static batch, and the throughput is the same.
TEST(ServeBatching, StaticAndContinuousAgreeAtSaturationWithUniformLengths) {
  const auto reqs = at_zero(512, 256, 128);
  for (KvMode kv : {KvMode::kReserved, KvMode::kPaged}) {
    EngineConfig s = config({Batching::kStatic, kv});
    s.max_batch = 32;
    EngineConfig c = s;
    c.policy = {Batching::kContinuous, kv};
    c.chunked_prefill = false;
    c.max_batched_tokens = 32 * 256;  // the whole batch's prompts in one step, as static does
    auto rs = simulate(s, reqs);
    auto rc = simulate(c, reqs);
    ASSERT_TRUE(rs && rc);
    EXPECT_EQ(rs->completed, 512);
    EXPECT_NEAR(rc->output_tps / rs->output_tps, 1.0, 1e-9);
    EXPECT_NEAR(rc->input_tps / rs->input_tps, 1.0, 1e-9);
    EXPECT_EQ(rs->padding_waste, 0);
    EXPECT_NEAR(rs->mean_batch, 32, 1e-9);
    EXPECT_NEAR(rc->mean_batch, 32, 1e-9);
    // Chunked prefill interleaves prompts with decodes: the same work, a different schedule.
    c.chunked_prefill = true;
    c.max_batched_tokens = 2048;
    rc = simulate(c, reqs);
    ASSERT_TRUE(rc);
    EXPECT_NEAR(rc->output_tps / rs->output_tps, 1.0, 0.05);
  }
  // Mixed lengths break the tie: continuous batching wins.
  auto mixed = poisson(1e9, 512, "256", "uniform:16:1024");
  EngineConfig s = config(kStaticReserved);
  s.max_batch = 32;
  EngineConfig c = s;
  c.policy = kContReserved;
  auto rs = simulate(s, mixed);
  auto rc = simulate(c, mixed);
  ASSERT_TRUE(rs && rc);
  EXPECT_GT(rc->output_tps, 1.3 * rs->output_tps);
}

// L = lambda W on the waiting queue: the time-integral of the queue's length as the replicas
// kept it, against the waits recorded per request; and the sampled series' mean against L.
TEST(ServeQueue, LittlesLawHolds) {
  for (Policy p : all_policies()) {
    EngineConfig c = config(p);
    c.max_batch = 8;
    c.kv_tokens = 60000;
    c.check_invariants = false;
    c.sample_interval_s = 0.05;
    auto r = simulate(c, poisson(12, 20000, "lognormal:300:2000", "lognormal:100:1000"));
    ASSERT_TRUE(r) << r.error().what();
    SCOPED_TRACE(p.name());
    EXPECT_GT(r->little_l, 0.1);  // a queue worth the name
    EXPECT_NEAR(r->little_l, r->little_lambda * r->little_w, 1e-6 * r->little_l);
    ASSERT_FALSE(r->queue.empty());
    const double sampled = std::accumulate(r->queue.begin(), r->queue.end(), 0.0) /
                           static_cast<double>(r->queue.size());
    EXPECT_NEAR(sampled, r->little_l, 0.1 * r->little_l + 0.05);
  }
}

// The cache accounting is recomputed from scratch after every step (check_invariants) and the
// allocation never passes the budget, also when paged caches run out and preempt.
TEST(ServeKvCache, NeverExceedsTheBudget) {
  const auto reqs = poisson(40, 3000, "lognormal:400:3000", "lognormal:300:2000");
  for (Policy p : all_policies()) {
    EngineConfig c = config(p);
    c.kv_tokens = 16000;
    c.max_batch = 64;
    auto r = simulate(c, reqs);
    ASSERT_TRUE(r) << p.name() << ": " << r.error().what();
    EXPECT_EQ(r->completed + r->rejected, 3000) << p.name();
    EXPECT_LE(r->kv_peak_allocated_tokens, r->kv_budget_tokens) << p.name();
    EXPECT_GT(r->kv_peak_allocated_tokens, r->kv_budget_tokens * 0.7) << p.name();
    EXPECT_LE(r->kv_used_tokens, r->kv_allocated_tokens + 1e-6) << p.name();
    if (p.kv == KvMode::kPaged) {
      EXPECT_GT(r->preemptions, 0) << p.name();
      // Paged blocks hold at most a block's worth of unused tokens per request (static batches
      // also keep their padding rows' blocks).
      if (p.batching == Batching::kContinuous) {
        EXPECT_LT(r->kv_waste, 0.1) << p.name();
      }
    } else {
      EXPECT_GT(r->kv_waste, 0.5) << p.name();
    }
  }
}

TEST(ServeKvCache, RequestsLongerThanTheReservationAreRejected) {
  EngineConfig c = config(kContReserved);
  c.max_seq_len = 1000;
  std::vector<Request> reqs = {{0, 500, 400, 0}, {0, 900, 200, 0}, {1, 10, 10, 0}};
  auto r = simulate(c, reqs);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rejected, 1);
  EXPECT_EQ(r->completed, 2);
  c.kv_tokens = 500;
  EXPECT_FALSE(simulate(c, reqs));  // the cache holds less than one reservation
}

// A span of decode steps stands for the steps one by one: the same schedule, the same figures.
TEST(ServeEngine, SpansGiveWhatStepByStepGives) {
  const auto reqs = poisson(25, 3000, "lognormal:400:3000", "lognormal:200:2000");
  for (Policy p : all_policies()) {
    EngineConfig c = config(p);
    c.kv_tokens = 30000;  // tight enough for paged preemptions
    c.check_invariants = false;
    EngineConfig one = c;
    one.max_span = 1;
    auto a = simulate(c, reqs);
    auto b = simulate(one, reqs);
    ASSERT_TRUE(a && b);
    SCOPED_TRACE(p.name());
    EXPECT_EQ(a->steps, b->steps);
    EXPECT_EQ(a->preemptions, b->preemptions);
    EXPECT_EQ(a->completed, b->completed);
    EXPECT_NEAR(a->makespan_s, b->makespan_s, 1e-9 * b->makespan_s);
    EXPECT_NEAR(a->ttft.p99, b->ttft.p99, 1e-9 * b->ttft.p99 + 1e-12);
    EXPECT_NEAR(a->tpot.p50, b->tpot.p50, 1e-9 * b->tpot.p50);
    EXPECT_NEAR(a->e2e.mean, b->e2e.mean, 1e-9 * b->e2e.mean);
    EXPECT_NEAR(a->gpu_busy, b->gpu_busy, 1e-9);
    EXPECT_NEAR(a->padding_waste, b->padding_waste, 1e-9);
    EXPECT_EQ(a->kv_peak_allocated_tokens, b->kv_peak_allocated_tokens);
    EXPECT_NEAR(a->kv_waste, b->kv_waste, 0.01);  // a span's growth is taken at its midpoint
    if (p.kv == KvMode::kPaged) {
      EXPECT_GT(a->preemptions, 0);
    }
  }
}

TEST(ServeEngine, SameSeedSameResultsOtherSeedOthers) {
  EngineConfig c = config(kContPaged);
  auto a = simulate(c, poisson(20, 4000, "lognormal:500:4000", "lognormal:200:2000", 7));
  auto b = simulate(c, poisson(20, 4000, "lognormal:500:4000", "lognormal:200:2000", 7));
  auto d = simulate(c, poisson(20, 4000, "lognormal:500:4000", "lognormal:200:2000", 8));
  ASSERT_TRUE(a && b && d);
  EXPECT_EQ(to_json({*a}, {}).dump(), to_json({*b}, {}).dump());
  EXPECT_NE(to_json({*a}, {}).dump(), to_json({*d}, {}).dump());
}

TEST(ServeEngine, HigherClassIsServedFirst) {
  EngineConfig c = config(kContPaged);
  c.classes = {*parse_class("interactive:0.2:ttft=1s"), *parse_class("batch:0.8")};
  c.max_batch = 16;
  PoissonWorkload w{30, 5000, *parse_length("500", "p"), *parse_length("300", "o"), 3};
  auto r = simulate(c, generate(w, c.classes));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->classes.size(), 2u);
  EXPECT_LT(r->classes[0].ttft.p50 * 5, r->classes[1].ttft.p50);
  EXPECT_GE(r->classes[0].slo_met, 0);
  EXPECT_EQ(r->classes[1].slo_met, -1);
  EXPECT_EQ(r->classes[0].requests + r->classes[1].requests, 5000);
}

TEST(ServeEngine, ReplicasShareTheLoad) {
  const auto reqs = at_zero(2000, 200, 200);
  EngineConfig one = config(kContPaged);
  EngineConfig two = one;
  two.replicas = 2;
  auto a = simulate(one, reqs);
  auto b = simulate(two, reqs);
  ASSERT_TRUE(a && b);
  EXPECT_NEAR(b->output_tps / a->output_tps, 2.0, 0.05);
  EXPECT_NEAR(b->gpu_busy, a->gpu_busy, 0.02);
}

TEST(ServeEngine, RefusesConfigurationsThatCannotRun) {
  EngineConfig c = config(kContPaged);
  c.max_batched_tokens = 100;  // chunked steps need room beside max_batch decodes
  EXPECT_FALSE(simulate(c, at_zero(1, 10, 10)));
  c = config(kContPaged);
  c.kv_tokens = 0;
  EXPECT_FALSE(simulate(c, at_zero(1, 10, 10)));
  EXPECT_FALSE(simulate(config(kContPaged), {}));
}

TEST(ServeReport, TextJsonAndHtmlCarryEveryPolicy) {
  std::vector<ServeResult> runs;
  for (Policy p : all_policies()) {
    auto r = simulate(config(p), poisson(20, 500, "300", "uniform:10:400"));
    ASSERT_TRUE(r);
    runs.push_back(*r);
  }
  const std::string text = render_text(runs, "headline");
  EXPECT_NE(text.find("static-reserved"), std::string::npos);
  EXPECT_NE(text.find("TTFT p99"), std::string::npos);
  auto j = to_json(runs, {{"model", "Llama-3.1-8B"}});
  ASSERT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["runs"][3]["policy"], "continuous-paged");
  EXPECT_EQ(j["setup"]["model"], "Llama-3.1-8B");
  EXPECT_TRUE(j["runs"][0]["ttft"].contains("p99_s"));
  const std::string html = render_html(runs, {{"model", "<x>"}}, "headline");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("&lt;x&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<x>"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::simserve
