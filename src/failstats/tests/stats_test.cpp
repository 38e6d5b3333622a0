// SPDX-License-Identifier: Apache-2.0
#include "failstats/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cardiac::failstats {
namespace {

constexpr TimeNs kHour = 3600 * kNsPerSec;
constexpr TimeNs kDay = 24 * kHour;

IncidentRecord incident(FaultClass c, std::string node, std::string gpu, TimeNs start,
                        std::optional<DurationNs> repair) {
  IncidentRecord r;
  r.fault_class = c;
  r.node = std::move(node);
  r.gpu = std::move(gpu);
  r.start = start;
  if (repair) r.end = start + *repair;
  return r;
}

TEST(Classes, IncidentsMapByXidThenKindThenWords) {
  EXPECT_EQ(classify_incident("lost", ""), FaultClass::kGpuLost);
  EXPECT_EQ(classify_incident("unresponsive", "a call hung"), FaultClass::kGpuLost);
  EXPECT_EQ(classify_incident("reset_required", ""), FaultClass::kResetRequired);
  EXPECT_EQ(classify_incident("error", "Xid 48: double-bit ECC"), FaultClass::kGpuMemory);
  EXPECT_EQ(classify_incident("lost", "xid=95"), FaultClass::kGpuMemory);
  EXPECT_EQ(classify_incident("error", "NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off"),
            FaultClass::kGpuLost);
  EXPECT_EQ(classify_incident("error", "thermal slowdown"), FaultClass::kThermal);
  EXPECT_EQ(classify_incident("node", ""), FaultClass::kNode);
  EXPECT_EQ(classify_incident("error", "unknown"), FaultClass::kOther);
  for (FaultClass c : kFaultClasses) EXPECT_EQ(class_from_name(class_name(c)), c);
  EXPECT_FALSE(class_from_name("gpu"));
}

TEST(Classes, EveryPresetComponentHasAClassOfItsScope) {
  auto m = sim::failure_preset("llama3");
  ASSERT_TRUE(m);
  for (const sim::Component& c : m->components) {
    FaultClass fc = classify_component(c);
    if (c.scope == sim::Scope::kJob) {
      EXPECT_EQ(fc, FaultClass::kSoftware) << c.name;
    }
    if (c.scope == sim::Scope::kDomain) {
      EXPECT_EQ(fc, FaultClass::kNetwork) << c.name;
    }
  }
  EXPECT_EQ(classify_component({"GPU HBM3 memory", "GPU", 1, sim::Scope::kGpu, 1}),
            FaultClass::kGpuMemory);
  EXPECT_EQ(classify_component({"PSU", "Host", 1, sim::Scope::kNode, 1}), FaultClass::kNode);
}

TEST(Tabulate, CountsRatesRepairsPerClassNodeAndGpu) {
  std::vector<NodeExposure> nodes = {{"a", 8, 80}, {"b", 8, 80}};
  std::vector<IncidentRecord> list = {
      incident(FaultClass::kGpuLost, "a", "a/0", 0, 2 * kHour),
      incident(FaultClass::kGpuLost, "a", "a/0", 5 * kDay, 4 * kHour),
      incident(FaultClass::kGpuMemory, "b", "b/3", kDay, 8 * kHour),
      incident(FaultClass::kNode, "b", "", 2 * kDay, std::nullopt),  // still open
      incident(FaultClass::kSoftware, "a", "", 3 * kDay, 0),
  };
  auto s = tabulate(list, nodes, 0, 10 * kDay);
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->gpu_days, 160);
  EXPECT_EQ(s->gpus, 16u);
  EXPECT_EQ(total(s->counts), 5u);
  EXPECT_EQ(hardware_total(s->counts), 4u);
  EXPECT_EQ(s->open, 1u);
  EXPECT_EQ(s->repairs[static_cast<std::size_t>(FaultClass::kSoftware)].n, 0u);
  auto by_class = rows(*s, By::kClass);
  const Row& lost = by_class[static_cast<std::size_t>(FaultClass::kGpuLost)];
  EXPECT_EQ(lost.rate.count, 2u);
  EXPECT_DOUBLE_EQ(lost.rate.per_1000, 12.5);  // 2 in 160 GPU-days
  EXPECT_NEAR(lost.rate.per_1000_low, 1000 * 0.2422093 / 160, 1e-4);
  EXPECT_NEAR(lost.rate.per_1000_high, 1000 * 7.224688 / 160, 1e-4);
  // 160 GPU-days over 16 GPUs is 240 h of the fleet: one loss every 120 h.
  EXPECT_DOUBLE_EQ(lost.rate.mtbi_hours, 120);
  EXPECT_DOUBLE_EQ(lost.repair.mean_hours, 3);
  EXPECT_DOUBLE_EQ(lost.repair.median_hours, 3);
  EXPECT_NEAR(lost.repair.p90_hours, 3.8, 1e-12);
  EXPECT_NEAR(lost.repair.mu, (std::log(2.0) + std::log(4.0)) / 2, 1e-12);
  EXPECT_NEAR(lost.repair.sigma, (std::log(4.0) - std::log(2.0)) / 2, 1e-12);
  const Row& thermal = by_class[static_cast<std::size_t>(FaultClass::kThermal)];
  EXPECT_EQ(thermal.rate.count, 0u);
  EXPECT_EQ(thermal.rate.per_1000_low, 0);
  EXPECT_NEAR(thermal.rate.per_1000_high, 1000 * 3.688879 / 160, 1e-4);
  EXPECT_TRUE(std::isinf(thermal.rate.mtbi_hours));
  EXPECT_TRUE(std::isnan(thermal.repair.mean_hours));

  auto by_node = rows(*s, By::kNode);
  ASSERT_EQ(by_node.size(), 2u);
  EXPECT_EQ(by_node[0].key, "a");
  EXPECT_EQ(by_node[0].rate.count, 3u);
  EXPECT_DOUBLE_EQ(by_node[0].rate.mtbi_hours, 24.0 * 80 / 8 / 3);
  auto by_gpu = rows(*s, By::kGpu);
  ASSERT_EQ(by_gpu.size(), 2u);
  EXPECT_EQ(by_gpu[0].key, "a/0");
  EXPECT_DOUBLE_EQ(by_gpu[0].rate.gpu_days, 10);
  EXPECT_DOUBLE_EQ(by_gpu[0].rate.mtbi_hours, 120);  // 10 days, 2 losses
  EXPECT_EQ(overall(*s).rate.count, 5u);
}

TEST(Tabulate, AnIncidentOnANodeWithoutExposureIsRefusedByName) {
  auto s = tabulate({incident(FaultClass::kNode, "ghost", "", 0, kHour)}, {{"a", 8, 1}}, 0, kDay);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().what().find("ghost"), std::string::npos);
}

TEST(Tabulate, NoExposureGivesNoRate) {
  auto s = tabulate({}, {}, 0, 0);
  ASSERT_TRUE(s);
  EXPECT_TRUE(std::isnan(overall(*s).rate.per_1000));
}

TEST(Merge, CountsExposuresAndRepairsAdd) {
  auto a =
      tabulate({incident(FaultClass::kGpuLost, "a", "a/0", 0, kHour)}, {{"a", 8, 40}}, 0, 5 * kDay);
  auto b = tabulate({incident(FaultClass::kGpuLost, "b", "b/1", kDay, 3 * kHour),
                     incident(FaultClass::kThermal, "b", "b/1", 2 * kDay, kHour)},
                    {{"b", 4, 20}}, kDay, 6 * kDay);
  ASSERT_TRUE(a && b);
  FailureStats m = *a;
  merge_into(m, *b);
  EXPECT_EQ(m.gpu_days, 60);
  EXPECT_EQ(m.gpus, 12u);
  EXPECT_EQ(m.window_start, 0);
  EXPECT_EQ(m.window_end, 6 * kDay);
  EXPECT_EQ(m.counts[static_cast<std::size_t>(FaultClass::kGpuLost)], 2u);
  EXPECT_EQ(m.repairs[static_cast<std::size_t>(FaultClass::kGpuLost)].n, 2u);
  EXPECT_DOUBLE_EQ(m.repairs[static_cast<std::size_t>(FaultClass::kGpuLost)].sum_hours, 4);
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.gpu_list.size(), 2u);
  // The same as tabulating everything at once.
  auto both = tabulate({incident(FaultClass::kGpuLost, "a", "a/0", 0, kHour),
                        incident(FaultClass::kGpuLost, "b", "b/1", kDay, 3 * kHour),
                        incident(FaultClass::kThermal, "b", "b/1", 2 * kDay, kHour)},
                       {{"a", 8, 40}, {"b", 4, 20}}, 0, 6 * kDay);
  ASSERT_TRUE(both);
  EXPECT_EQ(m.counts, both->counts);
  EXPECT_DOUBLE_EQ(overall(m).rate.per_1000, overall(*both).rate.per_1000);
  EXPECT_DOUBLE_EQ(overall(m).repair.sigma, overall(*both).repair.sigma);
  // The same node twice: two stretches of its history.
  merge_into(m, *b);
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(m.nodes[1].gpu_days, 40);
  EXPECT_EQ(total(m.nodes[1].counts), 4u);
}

TEST(Lemons, AFewBadNodesAreFoundWithTheirFactor) {
  // 50 nodes of 8 GPUs for 100 days; nodes 0-4 fail 10 times as often.
  std::vector<NodeExposure> nodes;
  std::vector<IncidentRecord> list;
  for (int n = 0; n < 50; ++n) {
    std::string name = "n" + std::to_string(100 + n);
    nodes.push_back({name, 8, 800});
    int failures = n < 5 ? 20 : 2;
    for (int i = 0; i < failures; ++i) {
      list.push_back(incident(FaultClass::kGpuLost, name, name + "/0", i * kDay, kHour));
    }
  }
  auto s = tabulate(list, nodes, 0, 100 * kDay);
  ASSERT_TRUE(s);
  Lemons l = estimate_lemons(*s);
  EXPECT_LT(l.dispersion_p, 1e-6);
  EXPECT_EQ(l.nodes, 5u);
  EXPECT_NEAR(l.fraction, 0.1, 1e-6);
  EXPECT_NEAR(l.factor, 10, 1e-3);
  EXPECT_NEAR(l.share, 100.0 / 190.0, 1e-6);
  EXPECT_GT(l.likelihood_ratio, 100);
}

TEST(Lemons, AnEvenFleetHasNone) {
  std::vector<NodeExposure> nodes;
  std::vector<IncidentRecord> list;
  for (int n = 0; n < 40; ++n) {
    std::string name = "n" + std::to_string(n);
    nodes.push_back({name, 8, 800});
    for (int i = 0; i < 3 + n % 3; ++i) {  // 3, 4 or 5: within Poisson noise
      list.push_back(incident(FaultClass::kGpuLost, name, "", i * kDay, kHour));
    }
  }
  // Software failures land anywhere and are not the hardware's fault.
  for (int i = 0; i < 30; ++i) list.push_back(incident(FaultClass::kSoftware, "n0", "", 0, {}));
  auto s = tabulate(list, nodes, 0, 100 * kDay);
  ASSERT_TRUE(s);
  Lemons l = estimate_lemons(*s);
  EXPECT_EQ(l.fraction, 0);
  EXPECT_EQ(l.factor, 1);
  EXPECT_GT(l.dispersion_p, 0.5);  // 3, 4, 5 are less spread than Poisson
}

}  // namespace
}  // namespace cardiac::failstats
