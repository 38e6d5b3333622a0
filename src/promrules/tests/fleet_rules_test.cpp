// SPDX-License-Identifier: Apache-2.0
// The fleet group's text: names, the job in every selector, the expected-GPU switch, and that
// every cardiac_ series it reads is exported.
#include "promrules/fleet_rules.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "metrics/registry.h"

namespace cardiac::promrules {
namespace {

TEST(FleetRules, GroupHasTheRecordingRulesAndAlerts) {
  const std::string y = export_fleet_rules({});
  EXPECT_EQ(y.rfind("  - name: \"cardiac_fleet\"\n    rules:\n", 0), 0u) << y;
  for (const char* name :
       {"record: \"instance:cardiac_gpus_answering:sum\"",
        "record: \"instance:cardiac_gpus_slowed:sum\"", "alert: \"cardiac_node_gpus_missing\"",
        "alert: \"cardiac_fleet_throttling\"", "alert: \"cardiac_fleet_xid_storm\"",
        "alert: \"cardiac_agent_down\"", "alert: \"cardiac_agent_not_sampling\"",
        "alert: \"cardiac_agent_series_missing\"", "alert: \"cardiac_agents_absent\"",
        "alert: \"cardiac_node_driver_odd_one_out\"", "alert: \"cardiac_node_kernel_odd_one_out\"",
        "alert: \"cardiac_node_nccl_odd_one_out\""}) {
    EXPECT_NE(y.find(name), std::string::npos) << name;
  }
  // Without a configured count, each node is held to its own past.
  EXPECT_NE(y.find("instance:cardiac_gpus_answering:sum < "
                   "max_over_time(instance:cardiac_gpus_answering:sum[1d])"),
            std::string::npos);
}

TEST(FleetRules, ExpectedGpusReplacesTheLookback) {
  FleetOptions o;
  o.expected_gpus = 8;
  const std::string y = export_fleet_rules(o);
  EXPECT_NE(y.find("expr: \"instance:cardiac_gpus_answering:sum < 8\""), std::string::npos) << y;
  EXPECT_EQ(y.find("max_over_time"), std::string::npos);
}

TEST(FleetRules, EverySelectorNamesTheJob) {
  FleetOptions o;
  o.job = "gpu-nodes";
  const std::string y = export_fleet_rules(o);
  static const std::regex kSelector(R"re(([a-zA-Z_][a-zA-Z0-9_]*)\{([^}]*)\})re");
  int selectors = 0;
  for (auto it = std::sregex_iterator(y.begin(), y.end(), kSelector); it != std::sregex_iterator();
       ++it) {
    const std::string body = (*it)[2];
    if (body.find("$labels") != std::string::npos || body.find("$value") != std::string::npos) {
      continue;  // a template, not a selector
    }
    ++selectors;
    EXPECT_NE(body.find("job=\\\"gpu-nodes\\\""), std::string::npos) << (*it)[0];
  }
  EXPECT_GE(selectors, 8);
  EXPECT_EQ(y.find("\\\"cardiac\\\""), std::string::npos);
}

TEST(FleetRules, ReadsOnlyExportedFamilies) {
  std::set<std::string> names;
  for (const auto& m : metrics::metric_registry()) names.insert(std::string(m.name));
  const std::string y = export_fleet_rules({});
  static const std::regex kName(R"re(\bcardiac_[a-z0-9_]+\{)re");
  int found = 0;
  for (auto it = std::sregex_iterator(y.begin(), y.end(), kName); it != std::sregex_iterator();
       ++it) {
    std::string n = it->str();
    n.pop_back();
    EXPECT_TRUE(names.count(n)) << n;
    ++found;
  }
  EXPECT_GE(found, 7);
}

}  // namespace
}  // namespace cardiac::promrules
