// SPDX-License-Identifier: Apache-2.0
// ExpositionCache: one render per distinct input, however many scrapes.
#include "metrics/exposition_cache.h"

#include <gtest/gtest.h>

#include "metrics/tests/support.h"

namespace cardiac::metrics {
namespace {

using testing::full_input;
using testing::two_gpu_report;

TEST(ExpositionCache, SameSampleRendersOnce) {
  auto report = std::make_shared<const health::StatusReport>(two_gpu_report());
  ExpositionCache cache;
  ExpositionOptions opt{.hostname = "node-1"};
  ExpositionInput in = full_input(*report);
  auto first = cache.render(in, opt, report);
  auto second = cache.render(full_input(*report), opt, report);
  EXPECT_EQ(first, second);  // the same text object: the server keeps its compressions by it
  EXPECT_EQ(cache.renders(), 1U);
  EXPECT_EQ(*first, render_metrics(in, opt));
}

TEST(ExpositionCache, RendersAgainWhenAnythingChanges) {
  auto report = std::make_shared<const health::StatusReport>(two_gpu_report());
  ExpositionCache cache;
  ExpositionOptions opt{.hostname = "node-1"};
  ExpositionInput in = full_input(*report);
  auto text = cache.render(in, opt, report);

  // A new sample: an equal report at a new address.
  auto next = std::make_shared<const health::StatusReport>(two_gpu_report());
  in.report = next.get();
  auto after_sample = cache.render(in, opt, next);
  EXPECT_NE(after_sample, text);
  EXPECT_EQ(cache.renders(), 2U);

  // Values read beside the snapshot at scrape time.
  in.agent.kmsg_up = 0.0;
  auto after_kmsg = cache.render(in, opt, next);
  EXPECT_EQ(cache.renders(), 3U);
  EXPECT_NE(*after_kmsg, *after_sample);
  in.queue = QueueMetrics{};
  in.queue->gpus_fenced = 1;
  cache.render(in, opt, next);
  EXPECT_EQ(cache.renders(), 4U);
  in.queue->gpus_fenced = 2;
  auto after_queue = cache.render(in, opt, next);
  EXPECT_EQ(cache.renders(), 5U);
  EXPECT_EQ(*after_queue, render_metrics(in, opt));
  opt.compat_dcgm = true;
  cache.render(in, opt, next);
  EXPECT_EQ(cache.renders(), 6U);
  cache.render(in, opt, next);
  EXPECT_EQ(cache.renders(), 6U);
}

TEST(ExpositionCache, BeforeTheFirstSample) {
  ExpositionCache cache;
  ExpositionInput in;
  in.agent.samples_total = 0;
  auto a = cache.render(in, {.hostname = "h"}, nullptr);
  auto b = cache.render(in, {.hostname = "h"}, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(cache.renders(), 1U);
}

}  // namespace
}  // namespace cardiac::metrics
