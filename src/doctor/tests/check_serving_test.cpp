// SPDX-License-Identifier: Apache-2.0
// The serving view on hand-built inputs: a growing process and its time to OOM, a flat process
// and a one-off allocation that stay quiet, an inference engine's preallocated memory told
// apart from exhaustion, and the engines' verdicts.
#include <gtest/gtest.h>

#include <algorithm>

#include "doctor/checks/checks.h"
#include "serving/prom_text.h"

namespace cardiac::doctor {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30U;
constexpr TimeNs kNow = 1700000000000000000;

// GPU 0 (80 GiB) with process 4242 holding `used`, `samples` readings 1 s apart ending now.
DoctorInput one_process(const std::function<std::uint64_t(int)>& used, int samples,
                        const std::string& name = "python3", unsigned util = 90) {
  DoctorInput in;
  in.now = kNow;
  for (int i = 0; i < samples; ++i) {
    nvml::GpuSnapshot s;
    s.available = true;
    s.taken_at = kNow - (samples - 1 - i) * kNsPerSec;
    nvml::GpuReading g;
    g.index = 0;
    g.uuid = "GPU-0";
    g.utilization_gpu = util;
    g.memory_total = 80 * kGiB;
    g.memory_used = used(i) + kGiB;
    g.memory_free = *g.memory_total - *g.memory_used;
    g.sampled_at = s.taken_at;
    nvml::GpuProcess p;
    p.pid = 4242;
    p.name = name;
    p.type = "compute";
    p.used_memory_bytes = used(i);
    g.processes.push_back(p);
    s.gpus.push_back(g);
    in.gpu_samples.push_back(s);
  }
  in.host_samples.emplace_back();
  return in;
}

// The agent's book for pid 4242: 20 minutes, a point each 15 s, ending 1 s before now.
ProcessVram agent_series(const std::function<double(int)>& bytes_at_s) {
  ProcessVram p;
  p.gpu = 0;
  p.pid = 4242;
  p.name = "python3";
  p.source = "agent";
  p.gpu_total_bytes = 80.0 * kGiB;
  for (int t = -1200; t <= -15; t += 15) {
    p.points.emplace_back(kNow + t * kNsPerSec, bytes_at_s(t));
  }
  p.gpu_free_bytes = 80.0 * kGiB - p.points.back().second - kGiB;
  return p;
}

std::vector<Finding> run_serving(const DoctorInput& in) {
  std::vector<Finding> out;
  check_resources(in, out);
  check_serving(in, out);
  return out;
}

const Finding* find_serving(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

TEST(CheckServing, SteadyGrowthFromTheAgentGetsATimeToOom) {
  // 40 GiB growing 1 GiB a minute, continued by the doctor's own 10 samples.
  auto at = [](int t) { return 40.0 * kGiB + t / 60.0 * kGiB; };
  auto in = one_process([&](int i) { return static_cast<std::uint64_t>(at(i - 9)); }, 10);
  in.process_vram.push_back(agent_series(at));
  in.process_cmdlines.emplace_back(4242, "python3 train.py --bs 64");
  auto out = run_serving(in);
  const Finding* f = find_serving(out, "serving.vram_growth");
  ASSERT_NE(f, nullptr);
  // 39 GiB free at 1 GiB a minute: about 39 minutes, under a day, over 10 minutes.
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->title.find("1.0 GiB a minute"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("39m"), std::string::npos) << f->title;
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_GE(f->evidence[0].series.size(), 80U);
  EXPECT_EQ(f->evidence[0].unit, "bytes");
  bool cmd = std::any_of(f->evidence.begin(), f->evidence.end(), [](const Evidence& e) {
    return e.text.find("train.py") != std::string::npos;
  });
  EXPECT_TRUE(cmd);
  EXPECT_NE(f->actions[0].find("memory snapshots"), std::string::npos);
}

TEST(CheckServing, FastGrowthIsCritical) {
  // 70 GiB growing 1 GiB every 10 s: 9 GiB free, about 90 s.
  auto at = [](int t) { return 70.0 * kGiB + t / 10.0 * kGiB; };
  auto in = one_process([&](int) { return 70 * kGiB; }, 1);
  in.gpu_samples.clear();
  in.process_vram.push_back(agent_series(at));
  auto out = run_serving(in);
  const Finding* f = find_serving(out, "serving.vram_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
}

TEST(CheckServing, FlatNoiseAndAOneOffAllocationStayQuiet) {
  auto noisy = one_process([](int) { return 30 * kGiB; }, 3);
  noisy.process_vram.push_back(
      agent_series([](int t) { return 30.0 * kGiB + ((t / 15) % 2 ? 3e8 : 0); }));
  EXPECT_EQ(find_serving(run_serving(noisy), "serving.vram_growth"), nullptr);
  auto step = one_process([](int) { return 60 * kGiB; }, 3);
  step.process_vram.push_back(
      agent_series([](int t) { return t < -1100 ? 10.0 * kGiB : 60.0 * kGiB; }));
  EXPECT_EQ(find_serving(run_serving(step), "serving.vram_growth"), nullptr);
  // The doctor's 10-second window alone is too short to call anything a trend.
  auto short_window = one_process([](int i) { return 10 * kGiB + i * (kGiB / 4); }, 10);
  EXPECT_EQ(find_serving(run_serving(short_window), "serving.vram_growth"), nullptr);
}

TEST(CheckServing, AFullGpuUnderVllmIsPreallocatedNotExhaustion) {
  auto in = one_process([](int) { return 75 * kGiB; }, 10);
  in.process_cmdlines.emplace_back(
      4242, "python3 -m vllm.entrypoints.openai.api_server --gpu-memory-utilization 0.95");
  auto out = run_serving(in);
  EXPECT_EQ(find_serving(out, "resources.vram_full"), nullptr);
  EXPECT_EQ(find_serving(out, "serving.vram_growth"), nullptr);
  const Finding* f = find_serving(out, "resources.vram_preallocated");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->title.find("preallocated by vLLM (KV cache), not exhaustion"), std::string::npos)
      << f->title;
  EXPECT_NE(f->explanation.find("95 %"), std::string::npos) << f->explanation;

  // The same full GPU under a training script is exhaustion.
  auto training = one_process([](int) { return 75 * kGiB; }, 10);
  training.process_cmdlines.emplace_back(4242, "python3 train.py");
  EXPECT_NE(find_serving(run_serving(training), "resources.vram_full"), nullptr);

  // An engine whose memory keeps climbing is not "preallocated".
  auto climbing = one_process([](int) { return 75 * kGiB; }, 1);
  climbing.process_cmdlines.emplace_back(4242, "vllm serve m");
  climbing.process_vram.push_back(agent_series([](int t) { return 75.0 * kGiB + t * 1e7; }));
  auto c = run_serving(climbing);
  EXPECT_EQ(find_serving(c, "resources.vram_preallocated"), nullptr);
  EXPECT_NE(find_serving(c, "resources.vram_full"), nullptr);
}

serving::EngineStats engine(const std::string& text) {
  auto s = serving::parse_prom_text(text, "t");
  EXPECT_TRUE(s);
  auto e = serving::engine_stats(*s);
  e.url = "http://127.0.0.1:8000/metrics";
  return e;
}

TEST(CheckServing, EngineVerdicts) {
  // Requests wait while the vLLM GPU is 20 % busy, cache at 30 %: scheduling.
  auto in = one_process([](int) { return 70 * kGiB; }, 5, "python3", 20);
  in.process_cmdlines.emplace_back(4242, "vllm serve m");
  in.engines.push_back(
      {.first = engine("vllm:num_requests_waiting 12\nvllm:num_requests_running 2\n"
                       "vllm:gpu_cache_usage_perc 0.3\n")});
  auto out = run_serving(in);
  const Finding* b = find_serving(out, "serving.batching");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->category, Category::kConfiguration);
  EXPECT_NE(b->title.find("20 % busy"), std::string::npos) << b->title;

  // KV cache full and preemptions rising between the two reads: memory-bound.
  in.engines = {{.first = engine("vllm:gpu_cache_usage_perc 0.99\nvllm:num_preemptions_total 3\n"),
                 .last = engine("vllm:gpu_cache_usage_perc 0.99\nvllm:num_preemptions_total 9\n")}};
  out = run_serving(in);
  const Finding* kv = find_serving(out, "serving.kv_cache_full");
  ASSERT_NE(kv, nullptr);
  EXPECT_NE(kv->title.find("6 requests preempted"), std::string::npos) << kv->title;
  EXPECT_NE(kv->actions.back().find("cardiac plan"), std::string::npos);

  // An engine that cannot be read is a finding, not a clean bill.
  serving::EngineStats down;
  down.url = "http://127.0.0.1:9/metrics";
  down.error = "no answer within 2s: Connection";
  in.engines = {{.first = down}};
  out = run_serving(in);  // held: the finding points into it
  const Finding* u = find_serving(out, "serving.engine_unreachable");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->severity, Severity::kWarning);
}

}  // namespace
}  // namespace cardiac::doctor
