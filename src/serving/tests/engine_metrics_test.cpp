// SPDX-License-Identifier: Apache-2.0
#include "serving/engine_metrics.h"

#include <gtest/gtest.h>

#include "serving/tests/vllm_metrics.h"

namespace cardiac::serving {
namespace {

EngineStats stats(const std::string& text) {
  auto s = parse_prom_text(text, "t");
  EXPECT_TRUE(s) << s.error().what();
  auto e = engine_stats(*s);
  e.url = "http://127.0.0.1:8000/metrics";
  return e;
}

TEST(EngineStats, VllmSglangAndTgiNames) {
  auto v = stats(testing::vllm_metrics(0.5, 2, 9, 4));
  EXPECT_EQ(v.engine, "vLLM");
  EXPECT_DOUBLE_EQ(*v.kv_cache_usage, 0.5);
  EXPECT_DOUBLE_EQ(*v.requests_waiting, 2);
  EXPECT_DOUBLE_EQ(*v.requests_running, 9);
  EXPECT_DOUBLE_EQ(*v.preemptions_total, 4);
  // Two data-parallel ranks: counts add up, the fuller cache counts.
  auto s = stats(
      "sglang:token_usage{dp=\"0\"} 0.3\nsglang:token_usage{dp=\"1\"} 0.97\n"
      "sglang:num_queue_reqs{dp=\"0\"} 4\nsglang:num_queue_reqs{dp=\"1\"} 5\n"
      "sglang:num_running_reqs 12\n");
  EXPECT_EQ(s.engine, "SGLang");
  EXPECT_DOUBLE_EQ(*s.kv_cache_usage, 0.97);
  EXPECT_DOUBLE_EQ(*s.requests_waiting, 9);
  auto t = stats("tgi_queue_size 3\ntgi_batch_current_size 8\n");
  EXPECT_EQ(t.engine, "TGI");
  EXPECT_FALSE(t.kv_cache_usage);
  EXPECT_DOUBLE_EQ(*t.requests_running, 8);
}

TEST(EngineStats, NoKnownNamesIsAnError) {
  auto e = stats("process_cpu_seconds_total 12\n");
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.error.find("no vLLM"), std::string::npos);
}

TEST(JudgeEngine, KvCacheFullWithWaitingOrPreemptionsIsMemoryBound) {
  auto full = stats(testing::vllm_metrics(0.98, 6, 40, 10));
  auto v = judge_engine(full, nullptr, 95);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Bottleneck::kKvCacheFull);
  EXPECT_NE(v->title.find("memory-bound"), std::string::npos) << v->title;
  EXPECT_NE(v->actions.back().find("cardiac plan"), std::string::npos);
  // Full, nothing waiting, but preemptions rose since the previous scrape.
  auto before = stats(testing::vllm_metrics(0.97, 0, 40, 10));
  auto after = stats(testing::vllm_metrics(0.97, 0, 40, 25));
  v = judge_engine(after, &before, 95);
  ASSERT_TRUE(v);
  EXPECT_NE(v->title.find("15 requests preempted"), std::string::npos) << v->title;
  // Full, nothing waiting and no new preemptions: the cache is simply used.
  EXPECT_FALSE(judge_engine(before, &before, 95));
}

TEST(JudgeEngine, QueueWhileTheGpuIdlesIsScheduling) {
  auto queued = stats(testing::vllm_metrics(0.30, 12, 2, 0));
  auto v = judge_engine(queued, nullptr, 20);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Bottleneck::kScheduling);
  EXPECT_NE(v->title.find("not hardware"), std::string::npos) << v->title;
  EXPECT_NE(v->actions[0].find("max-num-seqs"), std::string::npos);
  EXPECT_FALSE(judge_engine(queued, nullptr, 90));            // the GPU is busy: fine
  EXPECT_FALSE(judge_engine(queued, nullptr, std::nullopt));  // GPU unknown: no verdict
  EXPECT_FALSE(judge_engine(stats(testing::vllm_metrics(0.3, 0, 2, 0)), nullptr, 20));
}

}  // namespace
}  // namespace cardiac::serving
