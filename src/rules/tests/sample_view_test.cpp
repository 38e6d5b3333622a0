// SPDX-License-Identifier: Apache-2.0
// The flat sample view: names, labels, derived values, and absent readings giving no point.
#include "rules/sample_view.h"

#include <gtest/gtest.h>

#include "nvml/types.h"
#include "rules/tests/support.h"

namespace cardiac::rules {
namespace {

using testing::healthy_gpus;
using testing::healthy_host;
using testing::healthy_rates;

std::optional<double> find(const SampleView& v, std::string_view metric, const Labels& labels) {
  for (const auto& p : v.points) {
    if (p.metric == metric && p.labels == labels) return p.value;
  }
  return std::nullopt;
}

const Labels kGpu0{{"gpu", "0"}, {"uuid", "GPU-0"}};

TEST(SampleView, GpuPoints) {
  auto gpus = healthy_gpus(2);
  gpus.gpus[0].clock_event_reasons = nvml::kReasonHwThermalSlowdown | nvml::kReasonSwPowerCap;
  const auto host = healthy_host();
  const SampleView v = build_sample_view(gpus, host, nullptr, 42);
  EXPECT_EQ(v.at, 42);
  EXPECT_EQ(find(v, "gpu_count", {}), 2);
  EXPECT_EQ(find(v, "gpu_up", kGpu0), 1);
  EXPECT_EQ(find(v, "gpu_temperature", kGpu0), 60);
  EXPECT_EQ(find(v, "gpu_temperature_slowdown", kGpu0), 90);
  EXPECT_EQ(find(v, "gpu_memory_used_pct", kGpu0), 50);
  EXPECT_EQ(find(v, "gpu_power_usage_w", kGpu0), 300);
  EXPECT_EQ(find(v, "gpu_process_count", kGpu0), 1);
  EXPECT_EQ(find(v, "gpu_clock_event_hw_thermal", kGpu0), 1);
  EXPECT_EQ(find(v, "gpu_clock_event_sw_power_cap", kGpu0), 1);
  EXPECT_EQ(find(v, "gpu_clock_event_hw_slowdown", kGpu0), 0);
  EXPECT_EQ(find(v, "gpu_remapped_rows_pending", kGpu0), 0);
  // Gen4 x16: ceil(0.96 × 16) = 16 replays per minute.
  EXPECT_EQ(find(v, "gpu_pcie_replay_limit_per_min", kGpu0), 16);
  EXPECT_EQ(find(v, "gpu_temperature", Labels{{"gpu", "1"}, {"uuid", "GPU-1"}}), 60);
}

TEST(SampleView, AbsentReadingsGiveNoPoint) {
  auto gpus = healthy_gpus(1);
  gpus.gpus[0].temperature.reset();
  gpus.gpus[0].memory_total.reset();
  gpus.gpus[0].clock_event_reasons.reset();
  gpus.gpus[0].processes_supported = false;
  const SampleView v = build_sample_view(gpus, host::HostSnapshot{}, nullptr, 0);
  EXPECT_FALSE(find(v, "gpu_temperature", kGpu0));
  EXPECT_FALSE(find(v, "gpu_memory_used_pct", kGpu0));
  EXPECT_FALSE(find(v, "gpu_clock_event_hw_thermal", kGpu0));
  EXPECT_FALSE(find(v, "gpu_process_count", kGpu0));
  EXPECT_FALSE(find(v, "host_cpu_busy_pct", {}));
  EXPECT_FALSE(find(v, "host_memory_available_pct", {}));
  EXPECT_FALSE(find(v, "host_inlet_temperature_c", {}));
}

TEST(SampleView, LostGpuAndUnusableNvml) {
  auto gpus = healthy_gpus(2);
  gpus.gpus[0].health = nvml::DeviceHealth::kLost;
  gpus.gpus[1].health = nvml::DeviceHealth::kNotSampled;
  SampleView v = build_sample_view(gpus, host::HostSnapshot{}, nullptr, 0);
  EXPECT_EQ(find(v, "gpu_up", kGpu0), 0);
  EXPECT_FALSE(find(v, "gpu_up", Labels{{"gpu", "1"}, {"uuid", "GPU-1"}}));
  v = build_sample_view(nvml::GpuSnapshot{}, host::HostSnapshot{}, nullptr, 0);
  EXPECT_EQ(find(v, "gpu_count", {}), 0);
}

TEST(SampleView, HostPoints) {
  const auto host = healthy_host();
  const auto rates = healthy_rates();
  const SampleView v = build_sample_view(nvml::GpuSnapshot{}, host, &rates, 0);
  EXPECT_EQ(find(v, "host_cpu_busy_pct", {}), 30);
  EXPECT_EQ(find(v, "host_memory_available_pct", {}), 50);
  EXPECT_EQ(find(v, "host_swap_used_bytes", {}), 0);
  EXPECT_EQ(find(v, "host_swap_used_pct", {}), 0);
  EXPECT_EQ(find(v, "host_disk_used_pct", {{"mount", "/"}}), 50);
  EXPECT_EQ(find(v, "host_dstate_processes", {}), 0);
  EXPECT_EQ(find(v, "host_nic_util_pct", {{"nic", "eth0"}}), 40);
  EXPECT_EQ(find(v, "host_nic_errors_total", {{"nic", "eth0"}}), 3);
  EXPECT_EQ(find(v, "host_nic_drops_total", {{"nic", "eth0"}}), 7);
}

// A kept view written over by a smaller sample holds that sample's points and no more.
TEST(SampleView, AKeptViewHoldsOnlyTheLatestSample) {
  const auto host = healthy_host();
  const auto rates = healthy_rates();
  SampleView kept;
  build_sample_view(kept, healthy_gpus(8), host, &rates, 1);
  const std::size_t eight = kept.points.size();
  kept.points.push_back({"kmsg_up", {}, 1});  // what the sampler appends after
  auto one = healthy_gpus(1);
  one.gpus[0].temperature = 77;
  build_sample_view(kept, one, host, nullptr, 2);
  const SampleView fresh = build_sample_view(one, host, nullptr, 2);
  EXPECT_LT(kept.points.size(), eight);
  EXPECT_EQ(kept.at, 2);
  ASSERT_EQ(kept.points.size(), fresh.points.size());
  for (std::size_t i = 0; i < fresh.points.size(); ++i) {
    EXPECT_EQ(kept.points[i].metric, fresh.points[i].metric) << i;
    EXPECT_EQ(kept.points[i].labels, fresh.points[i].labels) << i;
    EXPECT_EQ(kept.points[i].value, fresh.points[i].value) << i;
  }
  EXPECT_EQ(find(kept, "gpu_temperature", kGpu0), 77);
  EXPECT_FALSE(find(kept, "host_cpu_busy_pct", {}));
}

// A GPU that keeps its index and UUID keeps its label set from build to build; one whose UUID
// changed (another board in the slot) gets a set of its own.
TEST(SampleView, AKeptViewKeepsTheLabelSetOfAGpuThatStaysTheSame) {
  const auto host = healthy_host();
  auto gpus = healthy_gpus(2);
  SampleView kept;
  build_sample_view(kept, gpus, host, nullptr, 1);
  const auto labels_of = [&](std::string_view gpu) -> const Labels* {
    for (const auto& p : kept.points) {
      if (p.metric == "gpu_temperature" && p.labels.at("gpu") == gpu) return &p.labels;
    }
    return nullptr;
  };
  ASSERT_NE(labels_of("0"), nullptr);
  const auto* first0 = &labels_of("0")->map();
  const auto* first1 = &labels_of("1")->map();
  gpus.gpus[1].uuid = "GPU-new";
  build_sample_view(kept, gpus, host, nullptr, 2);
  EXPECT_EQ(&labels_of("0")->map(), first0);
  EXPECT_NE(&labels_of("1")->map(), first1);
  EXPECT_EQ(labels_of("1")->at("uuid"), "GPU-new");
  gpus.gpus[1].uuid.clear();  // the UUID could not be read
  build_sample_view(kept, gpus, host, nullptr, 3);
  EXPECT_FALSE(labels_of("1")->contains("uuid"));
  EXPECT_EQ(labels_of("1")->key(), "gpu=1");
}

TEST(SampleView, EveryPointIsInTheCatalogWithItsScope) {
  const auto gpus = healthy_gpus(1);
  const auto host = healthy_host();
  const auto rates = healthy_rates();
  const SampleView v = build_sample_view(gpus, host, &rates, 0);
  for (const auto& p : v.points) {
    const MetricInfo* m = find_metric(p.metric);
    ASSERT_NE(m, nullptr) << p.metric;
    EXPECT_EQ(m->scope == Scope::kGpu, p.labels.count("gpu") == 1) << p.metric;
  }
}

TEST(SampleView, ReplayAllowancePerGeneration) {
  EXPECT_DOUBLE_EQ(pcie_replays_per_lane_per_min(3), 0.48);
  EXPECT_DOUBLE_EQ(pcie_replays_per_lane_per_min(4), 0.96);
  EXPECT_DOUBLE_EQ(pcie_replays_per_lane_per_min(5), 1.92);
  EXPECT_EQ(pcie_replays_per_lane_per_min(0), 0);
}

TEST(SampleView, LabelsKeyIsCanonical) {
  EXPECT_EQ(labels_key({{"uuid", "GPU-1"}, {"gpu", "1"}}), "gpu=1,uuid=GPU-1");
  EXPECT_EQ(labels_key({}), "");
}

}  // namespace
}  // namespace cardiac::rules
